-- A schema-only restore creates each fenced table (auto-protected in row
-- scope, the defaults) and then the dumped guard, whose policy may differ:
-- the table takes the dumped guard's policy, and refuses writes (TF004) until
-- fencing's data brings its state; the WARNING names the policy once, by
-- what differs from the defaults. Simulated: the dumped CREATE TRIGGER of one
-- table replayed on a freshly declared twin.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE TABLE rw_src (id int PRIMARY KEY, shard text NOT NULL, v int, fence fencing_token);
SELECT fencing_protect('rw_src', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'rw_ns');
CREATE TABLE rw_src2 (id int PRIMARY KEY, v int, tok fencing_token);
SELECT fencing_protect('rw_src2', strict => true, on_stale => 'skip');
CREATE TABLE rw_dst (id int PRIMARY KEY, shard text NOT NULL, v int, fence fencing_token);
CREATE TABLE rw_dst2 (id int PRIMARY KEY, v int, tok fencing_token);
\set ECHO none
SELECT replace(pg_get_triggerdef(t.oid), 'ON public.' || c.relname || ' ',
               'ON public.' || replace(c.relname, 'src', 'dst') || ' ')
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relname IN ('rw_src', 'rw_src2') AND t.tgname LIKE 'zz_fencing_guard%'
 ORDER BY c.relname \gexec
\set ECHO all
-- Under the dumped policy, refusing writes until fencing's data comes.
SELECT table_name, scope, strict, on_stale, guard_ok FROM fencing_protected
 WHERE table_name::text LIKE 'rw\_dst%' ORDER BY 1;
DROP TABLE rw_src, rw_src2, rw_dst, rw_dst2;
DELETE FROM fencing.resource_namespace WHERE name = 'rw_ns';
