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

-- When fencing.stats_max entries are in use, making a new entry evicts the
-- least recently used ones (as pg_stat_statements does): fencing_stats_info
-- counts them in evicted, so counting never stops and never stops silently.
CREATE FUNCTION fencing.stats_evicted()
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_stats_evicted' LANGUAGE C VOLATILE;

CREATE OR REPLACE VIEW @extschema@.fencing_stats_info AS
    SELECT i.preloaded, i.track_stats, i.preloaded AND i.track_stats AS counters_enabled,
           i.max_entries, i.entries, i.untracked_events, i.stats_reset,
           CASE WHEN NOT i.preloaded
                THEN 'counters need shared_preload_libraries = ''fencing'' and a restart'
                WHEN NOT i.track_stats THEN 'counters are off: SET fencing.track_stats = on'
           END AS hint,
           fencing.stats_evicted() AS evicted
      FROM fencing.stats_info() i;

-- The views: an object without an entry once entries were evicted may have
-- lost its counts with it, so it shows NULL (and says why), not 0.
-- fencing_stats also shows each namespace's and table's retirement: whether
-- it is on, its automatic policy (idle, NULL for manual only), its floor, how
-- many entries were retired into it and when last; highest_hwm and
-- tokens_left count the floor (retired HWMs live on in it).
CREATE OR REPLACE VIEW @extschema@.fencing_stats WITH (security_barrier = true) AS
    WITH info AS (SELECT i.preloaded AND i.track_stats AS enabled, i.stats_reset,
                         CASE WHEN NOT i.preloaded
                              THEN 'counters need shared_preload_libraries = ''fencing'' and a restart'
                              WHEN NOT i.track_stats
                              THEN 'counters are off: SET fencing.track_stats = on'
                         END AS hint,
                         i.preloaded,
                         i.entries OPERATOR(pg_catalog.>=) i.max_entries AS is_full,
                         fencing.stats_evicted() OPERATOR(pg_catalog.>) 0 AS has_evicted
                    FROM fencing.stats_info() i),
    raw AS (SELECT * FROM fencing.write_stats()),
    -- Namespaces by their full names: the catalog's, and the entries'
    -- untruncated ones.
    names AS (
        SELECT p.resource_namespace AS namespace FROM fencing.protected p
         WHERE p.scope OPERATOR(pg_catalog.=) 'resource'
        UNION
        SELECT n.name FROM fencing.resource_namespace n
        UNION
        SELECT r.namespace FROM raw r
         WHERE r.kind OPERATOR(pg_catalog.=) 'namespace' AND NOT r.names_truncated),
    -- owner_known: the namespace is the full name, whose owner decides.
    objects AS (
        SELECT 'table'::pg_catalog.text AS kind, p.relid::pg_catalog.oid AS relid,
               NULL::pg_catalog.text AS namespace, NULL::pg_catalog.int8 AS name_hash,
               true AS owner_known
          FROM fencing.protected p
        UNION
        SELECT r.kind, r.relid, NULL, NULL, true FROM raw r
         WHERE r.kind OPERATOR(pg_catalog.=) 'table'
           AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c
                        WHERE c.oid OPERATOR(pg_catalog.=) r.relid)
        UNION
        SELECT 'namespace', NULL, n.namespace, fencing.stats_name_hash(n.namespace, NULL), true
          FROM names n
         WHERE EXISTS (SELECT 1 FROM fencing.protected p
                        WHERE p.resource_namespace OPERATOR(pg_catalog.=) n.namespace)
            OR EXISTS (SELECT 1 FROM raw r
                        WHERE r.kind OPERATOR(pg_catalog.=) 'namespace'
                          AND r.name_hash OPERATOR(pg_catalog.=)
                              fencing.stats_name_hash(n.namespace, NULL))
        UNION
        -- A truncated entry no catalog name matches.
        SELECT r.kind, NULL, r.namespace, r.name_hash, false FROM raw r
         WHERE r.kind OPERATOR(pg_catalog.=) 'namespace' AND r.names_truncated
           AND NOT EXISTS (SELECT 1 FROM names n
                            WHERE fencing.stats_name_hash(n.namespace, NULL)
                                  OPERATOR(pg_catalog.=) r.name_hash))
    SELECT o.kind, o.relid::pg_catalog.regclass AS table_name, o.namespace,
           info.enabled AS counters_enabled,
           c.accepted OPERATOR(pg_catalog.+) c.unfenced OPERATOR(pg_catalog.+) c.rejected
               OPERATOR(pg_catalog.+) c.skipped OPERATOR(pg_catalog.+) c.missing_token
               AS writes_checked,
           c.accepted AS writes_accepted, c.unfenced AS writes_unfenced,
           c.rejected AS writes_rejected, c.skipped AS writes_skipped,
           c.missing_token AS writes_missing_token,
           r.rejected_at AS last_rejection_at,
           r.rejected_offered::@extschema@.fencing_token AS last_rejected_token,
           r.rejected_hwm::@extschema@.fencing_token AS last_rejection_hwm,
           CASE WHEN pg_catalog.has_table_privilege(r.rejected_relid, 'SELECT')
                     AND NOT (SELECT c.relrowsecurity FROM pg_catalog.pg_class c
                               WHERE c.oid OPERATOR(pg_catalog.=) r.rejected_relid)
                THEN r.rejected_key END AS last_rejected_key,
           h.hwm::@extschema@.fencing_token AS highest_hwm,
           9223372036854775807 OPERATOR(pg_catalog.-) h.hwm AS tokens_left,
           h.hwm::pg_catalog.float8 OPERATOR(pg_catalog./) 9223372036854775807::pg_catalog.float8
               AS token_range_used,
           CASE WHEN info.preloaded THEN info.stats_reset END AS stats_reset,
           CASE WHEN info.preloaded AND NOT k.counted AND info.has_evicted
                THEN 'not counted since an eviction: all fencing.stats_max entries were in use and the least recently used were evicted (see fencing_stats_info.evicted)'
                WHEN info.preloaded AND NOT k.counted
                THEN 'not counted: all fencing.stats_max entries are in use (see fencing_stats_info.untracked_events)'
                ELSE info.hint END AS hint,
           -- Retirement: the floor the object's idle entries were folded into.
           COALESCE(fl.enabled, false) AS retirement_enabled,
           fl.idle AS retirement_idle,
           fl.floor::@extschema@.fencing_token AS floor,
           COALESCE(fl.retired, 0) AS retired,
           fl.retired_at AS last_retired_at
      FROM objects o
     CROSS JOIN info
     -- A namespace's floor (resource HWMs and lease rows), a table's
     -- (tombstones); none until retirement was first switched on.
     LEFT JOIN LATERAL (
           SELECT rf.floor, rf.enabled, rf.idle, rf.retired, rf.retired_at
             FROM fencing.resource_floor rf
            WHERE o.kind OPERATOR(pg_catalog.=) 'namespace' AND o.owner_known
              AND rf.namespace OPERATOR(pg_catalog.=) o.namespace
           UNION ALL
           SELECT tf.floor, tf.enabled, tf.idle, tf.retired, tf.retired_at
             FROM fencing.tombstone_floor tf
            WHERE o.kind OPERATOR(pg_catalog.=) 'table'
              AND tf.relid::pg_catalog.oid OPERATOR(pg_catalog.=) o.relid) fl ON true
      -- Hashable equalities (IS NOT DISTINCT FROM would be a nested loop over
      -- every entry): a table has no name hash, a namespace no OID.
      LEFT JOIN raw r
        ON r.kind OPERATOR(pg_catalog.=) o.kind
       AND COALESCE(r.relid, 0::pg_catalog.oid) OPERATOR(pg_catalog.=)
           COALESCE(o.relid, 0::pg_catalog.oid)
       AND COALESCE(r.name_hash, 0) OPERATOR(pg_catalog.=) COALESCE(o.name_hash, 0)
     -- Counting, an object without an entry has counted nothing yet: 0;
     -- unless every entry is in use, or entries were evicted (this object's
     -- may have been among them): then what it counted is not known (NULL,
     -- and the hint says why), not "nothing turned away".
     CROSS JOIN LATERAL (
           SELECT info.preloaded
                  AND (r.kind IS NOT NULL OR NOT (info.is_full OR info.has_evicted)) AS counted) k
     CROSS JOIN LATERAL (
           SELECT CASE WHEN k.counted THEN COALESCE(r.accepted, 0) END AS accepted,
                  CASE WHEN k.counted THEN COALESCE(r.unfenced, 0) END AS unfenced,
                  CASE WHEN k.counted THEN COALESCE(r.rejected, 0) END AS rejected,
                  CASE WHEN k.counted THEN COALESCE(r.skipped, 0) END AS skipped,
                  CASE WHEN k.counted THEN COALESCE(r.missing_token, 0) END AS missing_token) c
     CROSS JOIN LATERAL (
           SELECT pg_catalog.max(x) AS hwm
             FROM (SELECT r.highest_hwm
                   UNION ALL
                   -- Retired HWMs live on in the floor.
                   SELECT fl.floor
                   UNION ALL
                   SELECT t.hwm FROM fencing.table_hwm t
                    WHERE t.relid::pg_catalog.oid OPERATOR(pg_catalog.=) o.relid) AS m(x)) h
     WHERE pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
        OR CASE WHEN o.kind OPERATOR(pg_catalog.=) 'table'
                THEN pg_catalog.has_table_privilege(o.relid, 'SELECT')
                ELSE o.owner_known
                     AND pg_catalog.pg_has_role((CASE WHEN o.namespace OPERATOR(pg_catalog.=) 'default'
                            THEN (SELECT e.extowner FROM pg_catalog.pg_extension e
                                   WHERE e.extname OPERATOR(pg_catalog.=) 'fencing')
                            ELSE (SELECT n.owner::pg_catalog.oid FROM fencing.resource_namespace n
                                   WHERE n.name OPERATOR(pg_catalog.=) o.namespace) END), 'USAGE')
           END;
CREATE OR REPLACE VIEW @extschema@.fencing_lease_stats WITH (security_barrier = true) AS
    WITH info AS (SELECT i.preloaded AND i.track_stats AS enabled, i.preloaded, i.stats_reset,
                         i.entries OPERATOR(pg_catalog.>=) i.max_entries AS is_full,
                         fencing.stats_evicted() OPERATOR(pg_catalog.>) 0 AS has_evicted
                    FROM fencing.stats_info() i)
    SELECT COALESCE(l.namespace, s.namespace) AS namespace,
           COALESCE(l.resource, s.resource) AS resource,
           info.enabled AS counters_enabled,
           c.acquisitions, c.contended AS contended_attempts,
           c.wait_total_us OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8 AS wait_total_ms,
           c.wait_max_us OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8 AS wait_max_ms,
           c.renewals, c.releases,
           c.hold_total_us OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8 AS hold_total_ms,
           c.hold_max_us OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8 AS hold_max_ms,
           c.expiries AS expiries_detected,
           COALESCE(l.token, s.last_token)::@extschema@.fencing_token AS current_token,
           l.holder,
           (l.released_at IS NULL
            AND l.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()) AS live,
           CASE WHEN info.preloaded THEN info.stats_reset END AS stats_reset
      FROM fencing.lease l
      -- By the hash of the full names (the entry's may be truncated).
      FULL JOIN fencing.lease_stats() s
        ON s.name_hash OPERATOR(pg_catalog.=) fencing.stats_name_hash(l.namespace, l.resource)
     CROSS JOIN info
     -- Counting, a resource without an entry has counted nothing yet: 0;
     -- unless every entry is in use or entries were evicted: then what it
     -- counted is not known (NULL).
     CROSS JOIN LATERAL (
           SELECT info.preloaded
                  AND (s.namespace IS NOT NULL OR NOT (info.is_full OR info.has_evicted)) AS counted) k
     CROSS JOIN LATERAL (
           SELECT CASE WHEN k.counted THEN COALESCE(s.acquisitions, 0) END AS acquisitions,
                  CASE WHEN k.counted THEN COALESCE(s.contended, 0) END AS contended,
                  CASE WHEN k.counted THEN COALESCE(s.wait_total_us, 0) END AS wait_total_us,
                  CASE WHEN k.counted THEN COALESCE(s.wait_max_us, 0) END AS wait_max_us,
                  CASE WHEN k.counted THEN COALESCE(s.renewals, 0) END AS renewals,
                  CASE WHEN k.counted THEN COALESCE(s.releases, 0) END AS releases,
                  CASE WHEN k.counted THEN COALESCE(s.hold_total_us, 0) END AS hold_total_us,
                  CASE WHEN k.counted THEN COALESCE(s.hold_max_us, 0) END AS hold_max_us,
                  CASE WHEN k.counted THEN COALESCE(s.expiries, 0) END AS expiries) c
     -- An entry without its lease row (the extension dropped and created
     -- again: lease rows are never deleted otherwise) is of a namespace whose
     -- owner may since have changed, under a name that may be truncated: only
     -- pg_read_all_stats sees it.
     WHERE pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE')
        OR l.namespace IS NOT NULL
           AND pg_catalog.pg_has_role((CASE WHEN l.namespace OPERATOR(pg_catalog.=) 'default'
                            THEN (SELECT e.extowner FROM pg_catalog.pg_extension e
                                   WHERE e.extname OPERATOR(pg_catalog.=) 'fencing')
                            ELSE (SELECT n.owner::pg_catalog.oid FROM fencing.resource_namespace n
                                   WHERE n.name OPERATOR(pg_catalog.=) l.namespace) END), 'USAGE');
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
