-- fencing 1.4 -> 1.5
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.5'" to load this file. \quit

----------------------------------------------------------------------------
-- Bounded state: retirement of idle per-key state into floors.
----------------------------------------------------------------------------

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
