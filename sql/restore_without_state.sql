-- A table restored without its fencing state (a dump of single tables,
-- pg_dump -t / -n / -N fencing, carries each guard but none of fencing's
-- data) takes its dumped guard's policy and refuses every write with TF004
-- until fencing's data arrives (the dump's fencing.protected row) or its
-- owner accepts the loss with fencing_reset_restored() (logged). Simulated:
-- the dumped CREATE TRIGGER replayed on a freshly declared twin.
\set VERBOSITY default
SET client_min_messages = warning;
CREATE ROLE rws_owner;
CREATE ROLE rws_other;
GRANT CREATE ON SCHEMA public TO rws_owner;
SET ROLE rws_owner;
CREATE TABLE rws_src (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('rws_src', scope => 'table');
-- The twin: rows at tokens 10 and 20, as a restored data section leaves them.
CREATE TABLE rws_dst (id int PRIMARY KEY, v int, fence fencing_token);
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO rws_dst VALUES (1, 0); COMMIT;
BEGIN; SET LOCAL fencing.token = 20; INSERT INTO rws_dst VALUES (2, 0); COMMIT;
RESET ROLE;
-- The dumped guard (a superuser restores).
\set ECHO none
SELECT replace(pg_get_triggerdef(t.oid), 'ON public.rws_src ', 'ON public.rws_dst ')
  FROM pg_trigger t WHERE t.tgrelid = 'rws_src'::regclass AND t.tgname LIKE 'zz_fencing_guard%' \gexec
\set ECHO all
-- Fenced under the dumped policy (table scope), its guard marked.
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'rws_dst'::regclass;
SELECT count(*) AS marked_guards FROM pg_trigger
 WHERE tgrelid = 'rws_dst'::regclass AND tgname LIKE 'zz_fencing_guard%' AND tgnargs = 3;
SELECT table_name, problem LIKE '%restored without its fencing state%' AS reported, repaired
  FROM fencing_verify_guards(true) WHERE table_name = 'rws_dst'::regclass;
-- Every write refused, a fresh token's and a token-less one alike.
SET ROLE rws_owner;
BEGIN; SET LOCAL fencing.token = 1000; UPDATE rws_dst SET v = 1 WHERE id = 1; ROLLBACK;
\set VERBOSITY terse
UPDATE rws_dst SET v = 1 WHERE id = 1;
INSERT INTO rws_dst VALUES (3, 0);
DELETE FROM rws_dst;
-- Only its owner accepts the loss.
SET ROLE rws_other;
SELECT fencing_reset_restored('rws_dst');
SET ROLE rws_owner;
SELECT fencing_reset_restored('rws_dst');
SELECT fencing_reset_restored('rws_dst') AS again;
RESET ROLE;
SELECT reset_by, target, key FROM fencing.reset_log WHERE target = 'public.rws_dst';
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'rws_dst'::regclass;
-- Then fenced under its policy: the table HWM starts at the rows' highest
-- token (what they were judged by), a lower one and none are refused.
SELECT fencing_high_water('rws_dst') AS table_hwm;
SET ROLE rws_owner;
BEGIN; SET LOCAL fencing.token = 15; UPDATE rws_dst SET v = 1 WHERE id = 1; ROLLBACK;
UPDATE rws_dst SET v = 1 WHERE id = 1;
BEGIN; SET LOCAL fencing.token = 20; UPDATE rws_dst SET v = 1 WHERE id = 1; ROLLBACK;
RESET ROLE;

-- A dump's fencing.protected row arriving (schema first, then the data)
-- lifts the mark: the state comes with it.
CREATE TABLE rws_dst2 (id int PRIMARY KEY, v int, fence fencing_token);
\set ECHO none
SELECT replace(pg_get_triggerdef(t.oid), 'ON public.rws_src ', 'ON public.rws_dst2 ')
  FROM pg_trigger t WHERE t.tgrelid = 'rws_src'::regclass AND t.tgname LIKE 'zz_fencing_guard%' \gexec
\set ECHO all
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name = 'rws_dst2'::regclass;
INSERT INTO fencing.protected (relid, token_column, scope, on_stale, strict, require_token)
VALUES ('rws_dst2', 'fence', 'table', 'error', false, true);
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'rws_dst2'::regclass;
-- fencing_protect() is no such arrival: it leaves a mark in place.
CREATE TABLE rws_dst3 (id int PRIMARY KEY, v int, fence fencing_token);
\set ECHO none
SELECT replace(pg_get_triggerdef(t.oid), 'ON public.rws_src ', 'ON public.rws_dst3 ')
  FROM pg_trigger t WHERE t.tgrelid = 'rws_src'::regclass AND t.tgname LIKE 'zz_fencing_guard%' \gexec
\set ECHO all
SELECT fencing_protect('rws_dst3', scope => 'table', strict => true);
SELECT table_name, strict, guard_ok FROM fencing_protected WHERE table_name = 'rws_dst3'::regclass;
-- A marked table's guard, dumped again (three arguments) and restored where
-- this database holds its policy, stays marked.
CREATE TABLE rws_dst4 (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('rws_dst4', scope => 'table', strict => true);
\set ECHO none
SELECT replace(pg_get_triggerdef(t.oid), 'ON public.rws_dst3 ', 'ON public.rws_dst4 ')
  FROM pg_trigger t WHERE t.tgrelid = 'rws_dst3'::regclass AND t.tgname LIKE 'zz_fencing_guard%' \gexec
\set ECHO all
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name = 'rws_dst4'::regclass;

-- The mark follows the logical table: a swap (fencing_transfer_state) and a
-- drop and recreate in one transaction (the kept state) hand it on.
CREATE TABLE rws_swap (LIKE rws_dst3 INCLUDING ALL);
SELECT fencing_transfer_state('rws_dst3', 'rws_swap');
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'rws_swap'::regclass;
BEGIN; DROP TABLE rws_dst4; CREATE TABLE rws_dst4 (id int PRIMARY KEY, v int, fence fencing_token); COMMIT;
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'rws_dst4'::regclass;
BEGIN; SET LOCAL fencing.token = 1000; INSERT INTO rws_dst4 VALUES (1, 0); ROLLBACK;

-- A table created while restoring (replica mode) is auto-protected marked:
-- its dumped policy and state are unknown until fencing's data arrives.
SET session_replication_role = replica;
CREATE TABLE rws_replica (id int PRIMARY KEY, v int, fence fencing_token);
RESET session_replication_role;
SELECT table_name, scope, guard_ok FROM fencing_protected WHERE table_name = 'rws_replica'::regclass;
BEGIN; SET LOCAL fencing.token = 5; INSERT INTO rws_replica VALUES (1, 0); ROLLBACK;
CREATE TABLE rws_origin (id int PRIMARY KEY, v int, fence fencing_token);
SELECT table_name, guard_ok FROM fencing_protected WHERE table_name = 'rws_origin'::regclass;

DROP TABLE rws_src, rws_dst, rws_dst2, rws_dst3, rws_dst4, rws_swap, rws_replica, rws_origin;
DELETE FROM fencing.reset_log WHERE target = 'public.rws_dst';
REVOKE CREATE ON SCHEMA public FROM rws_owner;
DROP ROLE rws_owner, rws_other;
