-- Statistics views without shared_preload_libraries (the installcheck server
-- does not preload fencing; test/t/stats.pl covers a preloaded server): the
-- views answer with what the catalogs know, counters NULL, and say how to
-- enable the counters. fencing_stats_reset() is privileged.
\set VERBOSITY terse
\set SHOW_CONTEXT never
CREATE ROLE regress_stats_owner;
CREATE ROLE regress_stats_other;
CREATE ROLE regress_stats_admin;
CREATE SCHEMA stats AUTHORIZATION regress_stats_owner;

-- The views' shape.
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute WHERE attrelid = 'fencing_stats'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute WHERE attrelid = 'fencing_lease_stats'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute WHERE attrelid = 'fencing_top'::regclass AND attnum > 0 ORDER BY attnum;
SELECT preloaded, track_stats, counters_enabled, max_entries, entries, untracked_events,
       stats_reset, hint
  FROM fencing_stats_info;

-- A scripted series: accepted, rejected (rolled back) and skipped writes in
-- row, table and resource scope, and leases.
SET SESSION AUTHORIZATION regress_stats_owner;
CREATE TABLE stats.inv (item text PRIMARY KEY, stock int, fence fencing_token);
CREATE TABLE stats.ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('stats.ledger', scope => 'table');
CREATE TABLE stats.orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('stats.orders', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'regress_stats', on_stale => 'skip');
INSERT INTO stats.inv VALUES ('a', 1, 10);
BEGIN; SET LOCAL fencing.token = 11; UPDATE stats.inv SET stock = 2; COMMIT;
BEGIN; SET LOCAL fencing.token = 12; UPDATE stats.inv SET stock = 3; COMMIT;
BEGIN; SET LOCAL fencing.token = 5; UPDATE stats.inv SET stock = 4; ROLLBACK;
SELECT fenced_update('stats.inv', 6, '{"item": "a"}', '{"stock": 5}') AS skipped;
INSERT INTO stats.ledger VALUES (1, 40);
INSERT INTO stats.ledger VALUES (2, 30);
INSERT INTO stats.orders VALUES (1, 's', 20);
UPDATE stats.orders SET fence = 10 WHERE id = 1;  -- skipped: 0 rows
SELECT fencing_acquire('stats-r', 'alice', '1 hour', namespace => 'regress_stats') AS token;
SELECT fencing_acquire('stats-r', 'bob', '1 hour', namespace => 'regress_stats') IS NULL AS busy;
RESET SESSION AUTHORIZATION;

-- Rows of the caller's tables and namespaces, counters NULL; the table-scope
-- HWM is known from the catalog; the lease's current token too.
SET SESSION AUTHORIZATION regress_stats_owner;
SELECT kind, table_name, namespace, counters_enabled, writes_checked, writes_accepted,
       writes_rejected, writes_skipped, last_rejected_token, last_rejected_key, highest_hwm,
       tokens_left, token_range_used, stats_reset, hint
  FROM fencing_stats
 WHERE table_name::text LIKE 'stats.%' OR namespace = 'regress_stats'
 ORDER BY kind, table_name::text;
SELECT namespace, resource, counters_enabled, acquisitions, contended_attempts, expiries_detected,
       current_token, holder, live
  FROM fencing_lease_stats WHERE namespace = 'regress_stats';
SELECT count(*) AS top_rows FROM fencing_top;

-- Another role sees neither the tables it cannot SELECT nor the namespaces
-- it does not own.
SET SESSION AUTHORIZATION regress_stats_other;
SELECT count(*) AS visible FROM fencing_stats
 WHERE table_name::text LIKE 'stats.%' OR namespace = 'regress_stats';
SELECT count(*) AS visible FROM fencing_lease_stats WHERE namespace = 'regress_stats';
-- The raw functions are out of reach (schema fencing).
SELECT count(*) FROM fencing.write_stats();

-- Reset: refused to ordinary roles, the table owner included.
SELECT fencing_stats_reset();
SET SESSION AUTHORIZATION regress_stats_owner;
SELECT fencing_stats_reset();
RESET SESSION AUTHORIZATION;
-- A superuser may reset; without preloading there is nothing to reset.
SELECT fencing_stats_reset();
-- A role granted EXECUTE may reset.
GRANT EXECUTE ON FUNCTION fencing_stats_reset() TO regress_stats_admin;
SET SESSION AUTHORIZATION regress_stats_admin;
SELECT fencing_stats_reset();
RESET SESSION AUTHORIZATION;
SELECT has_function_privilege('public', 'fencing_stats_reset()', 'EXECUTE') AS public_may_reset;

-- The settings: log_rejections and track_stats are superuser-only.
SHOW fencing.log_rejections;
SHOW fencing.track_stats;
SET SESSION AUTHORIZATION regress_stats_owner;
SET fencing.log_rejections = off;
SET fencing.track_stats = off;
RESET SESSION AUTHORIZATION;
SET fencing.log_rejections = off;
RESET fencing.log_rejections;

-- The LOG line goes to the server log only: a writer at client_min_messages =
-- log whose client encoding cannot show the key (LATIN1 has no euro sign)
-- still gets its skip, not a conversion error.
CREATE TABLE stats.euro (k text PRIMARY KEY, v int, fence fencing_token);
INSERT INTO stats.euro VALUES (chr(8364), 1, 10);
SET client_min_messages = log;
SET client_encoding = 'LATIN1';
SELECT fenced_update('stats.euro', 5, jsonb_build_object('k', chr(8364)), '{"v": 2}') AS skipped;
RESET client_encoding;
RESET client_min_messages;
SELECT v FROM stats.euro;

-- The hash the views match entries to full names by: where the namespace
-- ends is part of it.
SELECT fencing.stats_name_hash('ab', 'c') <> fencing.stats_name_hash('a', 'bc') AS split_differs,
       fencing.stats_name_hash('ab', NULL) = fencing.stats_name_hash('ab', NULL) AS stable;

DROP SCHEMA stats CASCADE;
REVOKE EXECUTE ON FUNCTION fencing_stats_reset() FROM regress_stats_admin;
DELETE FROM fencing.lease WHERE namespace = 'regress_stats';
DELETE FROM fencing.resource_hwm WHERE namespace = 'regress_stats';
DELETE FROM fencing.resource_namespace WHERE name = 'regress_stats';
DROP ROLE regress_stats_owner, regress_stats_other, regress_stats_admin;
