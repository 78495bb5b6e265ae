-- fencing 1.4 -> 1.5
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.5'" to load this file. \quit

----------------------------------------------------------------------------
-- Bounded state: retirement of idle per-key state into floors.
----------------------------------------------------------------------------

-- Every resource HWM and tombstone records when it was last raised (the
-- transaction's start), so that retirement can tell idle state. Existing
-- entries count as idle from the update on (a fast default: no rewrite).
ALTER TABLE fencing.resource_hwm
    ADD COLUMN raised_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now();
ALTER TABLE fencing.row_tombstone
    ADD COLUMN raised_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now();

-- A floor per resource namespace and per row-scope table: at least every HWM,
-- tombstone and lease token retired into it. A key with no entry of its own
-- is judged against its floor exactly as against an entry. Floors only rise.
CREATE TABLE fencing.resource_floor (
    namespace  pg_catalog.text PRIMARY KEY,
    floor      pg_catalog.int8 NOT NULL DEFAULT 0 CHECK (floor OPERATOR(pg_catalog.>=) 0),
    enabled    pg_catalog.bool NOT NULL DEFAULT true,
    idle       pg_catalog.interval,  -- automatic policy; NULL = manual only
    retired    pg_catalog.int8 NOT NULL DEFAULT 0,
    retired_at pg_catalog.timestamptz  -- last retirement that removed something
);
ALTER TABLE fencing.resource_floor SET ACCESS METHOD heap;
COMMENT ON TABLE fencing.resource_floor IS
    'per namespace: the floor idle resource HWMs and lease tokens were retired into';
SELECT pg_catalog.pg_extension_config_dump('fencing.resource_floor', '');

CREATE TABLE fencing.tombstone_floor (
    relid      pg_catalog.regclass PRIMARY KEY,
    floor      pg_catalog.int8 NOT NULL DEFAULT 0 CHECK (floor OPERATOR(pg_catalog.>=) 0),
    enabled    pg_catalog.bool NOT NULL DEFAULT true,
    idle       pg_catalog.interval,
    retired    pg_catalog.int8 NOT NULL DEFAULT 0,
    retired_at pg_catalog.timestamptz
);
ALTER TABLE fencing.tombstone_floor SET ACCESS METHOD heap;
COMMENT ON TABLE fencing.tombstone_floor IS
    'per row-scope table: the floor idle tombstones were retired into';
SELECT pg_catalog.pg_extension_config_dump('fencing.tombstone_floor', '');

CREATE FUNCTION @extschema@.fencing_enable_retirement(namespace pg_catalog.text,
        idle pg_catalog.interval DEFAULT NULL)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_enable_retirement_namespace'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_enable_retirement(pg_catalog.text, pg_catalog.interval) IS
    'opt a namespace in to retirement (its owner); idle: the automatic policy, NULL = manual';
CREATE FUNCTION @extschema@.fencing_enable_retirement(target pg_catalog.regclass,
        idle pg_catalog.interval DEFAULT NULL)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_enable_retirement_table'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_enable_retirement(pg_catalog.regclass, pg_catalog.interval) IS
    'opt a row-scope table in to retirement of its tombstones (its owner)';
CREATE FUNCTION @extschema@.fencing_disable_retirement(namespace pg_catalog.text)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_disable_retirement_namespace'
    LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION @extschema@.fencing_disable_retirement(pg_catalog.text) IS
    'no further retirement in the namespace; its floor stays and keeps judging';
CREATE FUNCTION @extschema@.fencing_disable_retirement(target pg_catalog.regclass)
    RETURNS void AS 'MODULE_PATHNAME', 'fencing_disable_retirement_table'
    LANGUAGE C VOLATILE STRICT;
COMMENT ON FUNCTION @extschema@.fencing_disable_retirement(pg_catalog.regclass) IS
    'no further retirement of the table''s tombstones; its floor stays and keeps judging';
CREATE FUNCTION @extschema@.fencing_retire(namespace pg_catalog.text, idle pg_catalog.interval,
        max_entries pg_catalog.int8 DEFAULT NULL)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_retire_namespace'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_retire(pg_catalog.text, pg_catalog.interval, pg_catalog.int8) IS
    'retire the namespace''s HWMs (and ended leases) idle for longer than idle into its floor';
CREATE FUNCTION @extschema@.fencing_retire(target pg_catalog.regclass, idle pg_catalog.interval,
        max_entries pg_catalog.int8 DEFAULT NULL)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_retire_table'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_retire(pg_catalog.regclass, pg_catalog.interval, pg_catalog.int8) IS
    'retire the table''s tombstones idle for longer than idle into its floor';
CREATE FUNCTION @extschema@.fencing_retire_due(max_entries pg_catalog.int8 DEFAULT NULL)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_retire_due'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_retire_due(pg_catalog.int8) IS
    'run every enabled automatic retirement policy the caller may run';

-- A dropped table's floor goes with it, as its tombstones do (any command
-- that drops a table: DROP TABLE, DROP SCHEMA, DROP OWNED, a cascade).
CREATE FUNCTION fencing.on_floor_drop() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM fencing.tombstone_floor f
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.object_type OPERATOR(pg_catalog.=) 'table' AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND f.relid OPERATOR(pg_catalog.=) d.objid;
END $$;
REVOKE ALL ON FUNCTION fencing.on_floor_drop() FROM PUBLIC;
CREATE EVENT TRIGGER fencing_floor_drop ON sql_drop
    EXECUTE FUNCTION fencing.on_floor_drop();
ALTER EVENT TRIGGER fencing_floor_drop ENABLE ALWAYS;

-- Floors travel with the other state tables to a subscriber (logical
-- replication), under the same rule: apply only raises them.
CREATE OR REPLACE FUNCTION fencing.replicated_state()
    RETURNS TABLE (relid pg_catalog.regclass, value_column pg_catalog.name,
                   key_columns pg_catalog.name[])
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    VALUES ('fencing.resource_hwm'::pg_catalog.regclass, 'hwm'::pg_catalog.name,
            ARRAY['namespace', 'resource']::pg_catalog.name[]),
           ('fencing.table_hwm', 'hwm', ARRAY['relid']),
           ('fencing.row_tombstone', 'hwm', ARRAY['relid', 'key']),
           ('fencing.lease', 'token', ARRAY['namespace', 'resource']),
           ('fencing.resource_floor', 'floor', ARRAY['namespace']),
           ('fencing.tombstone_floor', 'floor', ARRAY['relid'])
$$;
CREATE TRIGGER replica_keep_highest BEFORE INSERT OR UPDATE OR DELETE ON fencing.resource_floor
    FOR EACH ROW EXECUTE FUNCTION fencing.replica_keep_highest('floor', 'namespace');
CREATE TRIGGER replica_keep_highest BEFORE INSERT OR UPDATE OR DELETE ON fencing.tombstone_floor
    FOR EACH ROW EXECUTE FUNCTION fencing.replica_keep_highest('floor', 'relid');
ALTER TABLE fencing.resource_floor ENABLE REPLICA TRIGGER replica_keep_highest;
ALTER TABLE fencing.tombstone_floor ENABLE REPLICA TRIGGER replica_keep_highest;

-- (retirement: end of section)

----------------------------------------------------------------------------
-- Statistics: floors and retirement in the views; LRU eviction counted.
----------------------------------------------------------------------------

-- (statistics: end of section)

----------------------------------------------------------------------------
-- Leases: re-acquire, several resources at once, FIFO waiters, checks.
----------------------------------------------------------------------------

-- fencing_acquire itself is unchanged in signature; from 1.5 a re-acquire by
-- the holder of the live lease returns its live token and extends the lease.
COMMENT ON FUNCTION @extschema@.fencing_acquire(pg_catalog.text, pg_catalog.text,
        pg_catalog.interval, pg_catalog.interval, pg_catalog.text) IS
    'a new token for resource and a lease until now + ttl, fencing the predecessor (raises the resource''s HWM); the same holder''s live lease: its token, extended; NULL while another lease is live (waiters served in arrival order)';

CREATE FUNCTION @extschema@.fencing_acquire_all(resources pg_catalog.text[],
        holder pg_catalog.text, ttl pg_catalog.interval, wait pg_catalog.interval DEFAULT NULL,
        namespace pg_catalog.text DEFAULT 'default')
    RETURNS @extschema@.fencing_token[]
    AS 'MODULE_PATHNAME', 'fencing_acquire_all' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_acquire_all(pg_catalog.text[], pg_catalog.text,
        pg_catalog.interval, pg_catalog.interval, pg_catalog.text) IS
    'leases on every resource or on none: their tokens in the order of resources, NULL when not all could be acquired within wait; a resource given twice is an error (22023)';

CREATE FUNCTION @extschema@.fencing_check(resource pg_catalog.text,
        token @extschema@.fencing_token, namespace pg_catalog.text DEFAULT 'default')
    RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'fencing_check' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fencing_check(pg_catalog.text, @extschema@.fencing_token,
        pg_catalog.text) IS
    'whether token is still current for resource: no higher token accepted or issued, and its lease (when it has one) live; a check, not a fence: the answer can change right after';

-- The fenced DML functions' siblings that tell a stale token from a missing
-- row: rows written, rows refused as stale, and the highest HWM that refused
-- one (NULL when none was stale).
CREATE FUNCTION @extschema@.fenced_update_result(target pg_catalog.regclass,
        token @extschema@.fencing_token, key pg_catalog.jsonb, changes pg_catalog.jsonb,
        OUT written pg_catalog.int8, OUT stale pg_catalog.int8,
        OUT hwm @extschema@.fencing_token)
    AS 'MODULE_PATHNAME', 'fenced_update_result' LANGUAGE C VOLATILE;
CREATE FUNCTION @extschema@.fenced_delete_result(target pg_catalog.regclass,
        token @extschema@.fencing_token, key pg_catalog.jsonb,
        OUT written pg_catalog.int8, OUT stale pg_catalog.int8,
        OUT hwm @extschema@.fencing_token)
    AS 'MODULE_PATHNAME', 'fenced_delete_result' LANGUAGE C VOLATILE;
CREATE FUNCTION @extschema@.fenced_upsert_result(target pg_catalog.regclass,
        token @extschema@.fencing_token, "row" pg_catalog.jsonb,
        OUT written pg_catalog.int8, OUT stale pg_catalog.int8,
        OUT hwm @extschema@.fencing_token)
    AS 'MODULE_PATHNAME', 'fenced_upsert_result' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.fenced_update_result(pg_catalog.regclass,
        @extschema@.fencing_token, pg_catalog.jsonb, pg_catalog.jsonb) IS
    'fenced_update, reporting rows written, rows refused as stale and the highest HWM that refused one (NULL when none)';
COMMENT ON FUNCTION @extschema@.fenced_delete_result(pg_catalog.regclass,
        @extschema@.fencing_token, pg_catalog.jsonb) IS
    'fenced_delete, reporting rows deleted, rows refused as stale and the highest HWM that refused one (NULL when none)';
COMMENT ON FUNCTION @extschema@.fenced_upsert_result(pg_catalog.regclass,
        @extschema@.fencing_token, pg_catalog.jsonb) IS
    'fenced_upsert, reporting rows written, rows refused as stale and the highest HWM that refused one (NULL when none)';

-- (leases: end of section)
