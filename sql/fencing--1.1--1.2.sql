-- fencing 1.1 -> 1.2.
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.2'" to load this file. \quit

-- Every object reference is schema-qualified (pg_catalog, @extschema@ or
-- fencing), so this script does not depend on the caller's search_path.

----------------------------------------------------------------------------
-- Statistics: counters of fenced writes and leases (src/pg/stats.cpp).
--
-- The counters live in shared memory when fencing is in
-- shared_preload_libraries (a rejected write rolls its transaction back, so
-- they cannot be rows), until the server restarts or fencing_stats_reset().
-- Without preloading the views list what the catalogs know, with NULL
-- counters, counters_enabled = false and a hint.
--
-- The raw functions live in the fencing schema, which PUBLIC cannot use: they
-- are reached only through the views, which filter rows and keys by
-- privilege (a function in a view runs with the caller's EXECUTE right, so
-- the filtering cannot be left to the functions' grants).
----------------------------------------------------------------------------
CREATE FUNCTION fencing.write_stats(
        OUT kind pg_catalog.text, OUT relid pg_catalog.oid, OUT namespace pg_catalog.text,
        OUT accepted pg_catalog.int8, OUT unfenced pg_catalog.int8,
        OUT rejected pg_catalog.int8, OUT skipped pg_catalog.int8,
        OUT missing_token pg_catalog.int8, OUT highest_hwm pg_catalog.int8,
        OUT rejected_at pg_catalog.timestamptz, OUT rejected_offered pg_catalog.int8,
        OUT rejected_hwm pg_catalog.int8, OUT rejected_relid pg_catalog.oid,
        OUT rejected_key pg_catalog.text, OUT names_truncated pg_catalog.bool,
        OUT name_hash pg_catalog.int8)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'fencing_write_stats' LANGUAGE C VOLATILE;
CREATE FUNCTION fencing.lease_stats(
        OUT namespace pg_catalog.text, OUT resource pg_catalog.text,
        OUT acquisitions pg_catalog.int8, OUT contended pg_catalog.int8,
        OUT wait_total_us pg_catalog.int8, OUT wait_max_us pg_catalog.int8,
        OUT renewals pg_catalog.int8, OUT releases pg_catalog.int8,
        OUT hold_total_us pg_catalog.int8, OUT hold_max_us pg_catalog.int8,
        OUT expiries pg_catalog.int8, OUT last_token pg_catalog.int8,
        OUT names_truncated pg_catalog.bool, OUT name_hash pg_catalog.int8)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'fencing_lease_stats' LANGUAGE C VOLATILE;
CREATE FUNCTION fencing.stats_info(
        OUT preloaded pg_catalog.bool, OUT track_stats pg_catalog.bool,
        OUT max_entries pg_catalog.int4, OUT entries pg_catalog.int8,
        OUT untracked_events pg_catalog.int8, OUT stats_reset pg_catalog.timestamptz)
    RETURNS record AS 'MODULE_PATHNAME', 'fencing_stats_info' LANGUAGE C VOLATILE;

-- An entry's names are kept truncated (63 bytes of namespace, 127 of
-- resource), so the views never judge an entry by its stored names: they
-- match it to the catalog's full names (fencing.resource_namespace,
-- fencing.protected, fencing.lease) by the hash of the full names it is keyed
-- by, and a truncated entry that matches none is shown only to
-- pg_read_all_stats. (Else a role owning namespace 'NNN...' of 63 bytes would
-- see every longer namespace beginning so.)
CREATE FUNCTION fencing.stats_name_hash(namespace pg_catalog.text, resource pg_catalog.text)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_stats_name_hash'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE VIEW @extschema@.fencing_stats_info AS
    SELECT i.preloaded, i.track_stats, i.preloaded AND i.track_stats AS counters_enabled,
           i.max_entries, i.entries, i.untracked_events, i.stats_reset,
           CASE WHEN NOT i.preloaded
                THEN 'counters need shared_preload_libraries = ''fencing'' and a restart'
                WHEN NOT i.track_stats THEN 'counters are off: SET fencing.track_stats = on'
           END AS hint
      FROM fencing.stats_info() i;
GRANT SELECT ON @extschema@.fencing_stats_info TO PUBLIC;

-- One row per protected table (and per table that has counters) and per
-- resource namespace. Rows: tables the caller may SELECT, namespaces whose
-- owner's privileges the caller has; members of pg_read_all_stats see every
-- row. The last rejected key is shown only to a caller who may SELECT the
-- table it was written to (and the table has no row-level security), and only
-- as the writer's error DETAIL showed it.
CREATE VIEW @extschema@.fencing_stats WITH (security_barrier = true) AS
    WITH info AS (SELECT i.preloaded AND i.track_stats AS enabled, i.stats_reset,
                         CASE WHEN NOT i.preloaded
                              THEN 'counters need shared_preload_libraries = ''fencing'' and a restart'
                              WHEN NOT i.track_stats
                              THEN 'counters are off: SET fencing.track_stats = on'
                         END AS hint,
                         i.preloaded,
                         i.entries OPERATOR(pg_catalog.>=) i.max_entries AS is_full
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
           CASE WHEN info.preloaded AND NOT k.counted
                THEN 'not counted: all fencing.stats_max entries are in use (see fencing_stats_info.untracked_events)'
                ELSE info.hint END AS hint
      FROM objects o
     CROSS JOIN info
      -- Hashable equalities (IS NOT DISTINCT FROM would be a nested loop over
      -- every entry): a table has no name hash, a namespace no OID.
      LEFT JOIN raw r
        ON r.kind OPERATOR(pg_catalog.=) o.kind
       AND COALESCE(r.relid, 0::pg_catalog.oid) OPERATOR(pg_catalog.=)
           COALESCE(o.relid, 0::pg_catalog.oid)
       AND COALESCE(r.name_hash, 0) OPERATOR(pg_catalog.=) COALESCE(o.name_hash, 0)
     -- Counting, an object without an entry has counted nothing yet: 0;
     -- unless every entry is in use: then it is not counted at all (NULL, and
     -- the hint says so), not "nothing turned away".
     CROSS JOIN LATERAL (
           SELECT info.preloaded AND (r.kind IS NOT NULL OR NOT info.is_full) AS counted) k
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
GRANT SELECT ON @extschema@.fencing_stats TO PUBLIC;

-- One row per lease resource (fencing.lease) and per resource with counters,
-- for the namespaces whose owner's privileges the caller has (every row for
-- members of pg_read_all_stats). Times in milliseconds.
CREATE VIEW @extschema@.fencing_lease_stats WITH (security_barrier = true) AS
    WITH info AS (SELECT i.preloaded AND i.track_stats AS enabled, i.preloaded, i.stats_reset,
                         i.entries OPERATOR(pg_catalog.>=) i.max_entries AS is_full
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
     -- unless every entry is in use: then it is not counted (NULL).
     CROSS JOIN LATERAL (
           SELECT info.preloaded AND (s.namespace IS NOT NULL OR NOT info.is_full) AS counted) k
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
GRANT SELECT ON @extschema@.fencing_lease_stats TO PUBLIC;

-- The hottest objects: tables and namespaces by stale writes turned away,
-- lease resources by contention and expiries. SELECT * FROM fencing_top LIMIT 10.
CREATE VIEW @extschema@.fencing_top AS
    SELECT t.kind, t.object, t.stale_writes, t.contended_attempts, t.wait_total_ms,
           t.expiries_detected, t.last_rejection_at
      FROM (SELECT s.kind, COALESCE(s.table_name::pg_catalog.text, s.namespace) AS object,
                   s.writes_rejected OPERATOR(pg_catalog.+) s.writes_skipped AS stale_writes,
                   0::pg_catalog.int8 AS contended_attempts, 0::pg_catalog.float8 AS wait_total_ms,
                   0::pg_catalog.int8 AS expiries_detected, s.last_rejection_at
              FROM @extschema@.fencing_stats s
            UNION ALL
            SELECT 'lease', l.namespace OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) l.resource,
                   0, l.contended_attempts, l.wait_total_ms, l.expiries_detected, NULL
              FROM @extschema@.fencing_lease_stats l) t
     WHERE t.stale_writes OPERATOR(pg_catalog.>) 0
        OR t.contended_attempts OPERATOR(pg_catalog.>) 0
        OR t.expiries_detected OPERATOR(pg_catalog.>) 0
     ORDER BY t.stale_writes DESC, t.expiries_detected DESC, t.contended_attempts DESC,
              t.wait_total_ms DESC, t.object;
GRANT SELECT ON @extschema@.fencing_top TO PUBLIC;

-- Zeroes every counter (all databases). Privileged: superusers, and roles
-- granted EXECUTE on it.
CREATE FUNCTION @extschema@.fencing_stats_reset() RETURNS pg_catalog.void
    AS 'MODULE_PATHNAME', 'fencing_stats_reset' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION @extschema@.fencing_stats_reset() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.fencing_stats_reset() IS
    'zeroes the fencing counters of every database (superuser, or EXECUTE granted)';

----------------------------------------------------------------------------
-- Install-time security (issue 8): the SECURITY DEFINER functions.
--
-- The extension has three, all event-trigger functions written in PL/pgSQL
-- (the statistics views read a namespace's owner from
-- fencing.resource_namespace with the view owner's rights, as fencing_leases
-- does, so 1.2 adds none):
--   fencing.on_ddl_command_end()   (1.0, replaced in 1.1)
--   fencing.on_sql_drop()          (1.0)
--   fencing.on_sql_drop_cascade()  (1.1)
-- Why SECURITY DEFINER: they run inside every role's DDL (CREATE/ALTER/DROP
-- TABLE, DROP SCHEMA, DROP OWNED, ...) and must read and write the
-- extension's own tables (fencing.protected, fencing.table_hwm,
-- fencing.row_tombstone) and call fencing.on_table_ddl(), none of which an
-- ordinary role may touch (schema fencing is revoked from PUBLIC). They take
-- no argument: what they act on comes from pg_event_trigger_ddl_commands()
-- and pg_event_trigger_dropped_objects(), which PostgreSQL fills in, and they
-- run no SQL built from a name. A function returning event_trigger cannot
-- be called directly (0A000), only by the event triggers the extension owns.
-- search_path: pinned since 1.0 to "pg_catalog, pg_temp" (pg_temp last, so a
-- temporary object can shadow nothing); set again here so that this script
-- states it.
-- EXECUTE: nobody needs to call them (event triggers invoke their function
-- without an EXECUTE check), so PUBLIC loses the default EXECUTE grant.
----------------------------------------------------------------------------
ALTER FUNCTION fencing.on_ddl_command_end() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencing.on_sql_drop() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fencing.on_sql_drop_cascade() SET search_path = pg_catalog, pg_temp;
REVOKE ALL ON FUNCTION fencing.on_ddl_command_end() FROM PUBLIC;
REVOKE ALL ON FUNCTION fencing.on_sql_drop() FROM PUBLIC;
REVOKE ALL ON FUNCTION fencing.on_sql_drop_cascade() FROM PUBLIC;

-- The other functions of schema fencing are not SECURITY DEFINER. The C
-- trigger and event-trigger functions refuse any call that is not a trigger
-- call (39P01); fencing.protected_upsert() is PL/pgSQL (0A000). They keep
-- PUBLIC's EXECUTE: PostgreSQL checks it when a trigger is created on them,
-- and the extension's guards are created by whoever protects a table (the
-- table owner) through the C code. fencing.guard_status() keeps it too: the
-- fencing_protected view calls it as the querying role. Schema fencing is
-- not usable by PUBLIC, so none of them can be named by an ordinary role.
-- fencing.on_table_ddl() and fencing.ddl_check_start() had EXECUTE revoked
-- from PUBLIC in 1.0 and 1.1.

-- As every update script: guards re-installed the way this version does.
SELECT pg_catalog.count(*) FROM @extschema@.fencing_verify_guards(true);
