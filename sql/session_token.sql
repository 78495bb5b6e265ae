-- A fencing.token set for the session (SET, set_config(..., false), ALTER
-- ROLE ... SET) fences no write of a later transaction: such a write gets
-- TF002. SET LOCAL, set_config(..., true), a function's SET clause and
-- fenced_*() work as before. SET LOCAL outside a transaction block is an
-- error once the library is loaded.
\set VERBOSITY default
SET client_min_messages = notice;
SELECT current_user AS superuser \gset
CREATE TABLE st_t (id int PRIMARY KEY, v int, fence fencing_token);
CREATE TABLE st_open (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('st_open', require_token => false);
BEGIN;
SET LOCAL fencing.token = 10;
INSERT INTO st_t VALUES (1, 0);
INSERT INTO st_open VALUES (1, 0);
COMMIT;

-- SET LOCAL outside a transaction block would be lost: an error.
SET LOCAL fencing.token = 11;
\echo :LAST_ERROR_SQLSTATE
SET LOCAL fencing.token TO DEFAULT;
\echo :LAST_ERROR_SQLSTATE
-- In one query string it holds for the string's implicit transaction.
SET LOCAL fencing.token = 11 \; UPDATE st_t SET v = 1 WHERE id = 1;
SELECT v, fence FROM st_t;
SHOW fencing.token;
-- A query string whose last statement is the SET LOCAL lost its token:
-- refused at its commit, the write before it rolled back.
UPDATE st_open SET v = 7 WHERE id = 1 \; SET LOCAL fencing.token = 13;
\echo :LAST_ERROR_SQLSTATE
SELECT v FROM st_open;
-- Within a block the client opened (BEGIN in the string, before it, or a
-- COMMIT AND CHAIN), a SET LOCAL last in a string is the block's own.
BEGIN \; SET LOCAL fencing.token = 13;
COMMIT;
BEGIN;
UPDATE st_open SET v = 8 WHERE id = 1 \; SET LOCAL fencing.token = 13;
COMMIT AND CHAIN;
SELECT 1 \; SET LOCAL fencing.token = 14;
COMMIT;
SELECT v FROM st_open;
-- A chain ends with its successor, and a COMMIT AND CHAIN whose commit fails
-- starts none: the next query string is not taken for the client's block.
BEGIN;
COMMIT AND CHAIN;
COMMIT;
UPDATE st_open SET v = 9 WHERE id = 1 \; SET LOCAL fencing.token = 15;
\echo :SQLSTATE
CREATE TABLE st_deferred (id int PRIMARY KEY,
    r int REFERENCES st_deferred DEFERRABLE INITIALLY DEFERRED);
BEGIN;
INSERT INTO st_deferred VALUES (1, 2);
COMMIT AND CHAIN;
UPDATE st_open SET v = 9 WHERE id = 1 \; SET LOCAL fencing.token = 15;
\echo :SQLSTATE
DROP TABLE st_deferred;
-- A chain out of an aborted subtransaction or block (a rollback) holds.
BEGIN;
SAVEPOINT s;
SELECT 1 / 0;
COMMIT AND CHAIN;
SELECT 1 \; SET LOCAL fencing.token = 15;
SELECT 1 / 0;
ROLLBACK AND CHAIN;
SELECT 1 \; SET LOCAL fencing.token = 15;
COMMIT;
SELECT v FROM st_open;

-- SET (for the session): fences nothing in later transactions. A write that
-- carries nothing but it is refused (TF002), on every protected table, with
-- or without require_token.
SET fencing.token = 12;
UPDATE st_t SET v = 2 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
UPDATE st_open SET v = 2 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM st_t WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
-- A write that carries its own token (in the token column, from fenced_*()
-- or from its transaction) is judged by that token alone: the session value
-- (behind a pooler, maybe another client's) neither blocks nor fences it.
UPDATE st_t SET v = 2, fence = 10 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
UPDATE st_t SET v = 2, fence = 12 WHERE id = 1;
UPDATE st_t SET v = 2, fence = 11 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('st_t', 11, '{"id": 1}', '{"v": 99}');
INSERT INTO st_t VALUES (2, 0, 12);
BEGIN;
SET LOCAL fencing.token = 12;
UPDATE st_t SET v = 2 WHERE id = 1;
COMMIT;
SELECT id, v, fence FROM st_t ORDER BY id;
DELETE FROM st_t WHERE id = 2;
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_delete('st_t', 12, '{"id": 2}');
-- SET LOCAL in a block still works over it; then the session value is back.
BEGIN;
SET LOCAL fencing.token = 13;
UPDATE st_t SET v = 3 WHERE id = 1;
COMMIT;
UPDATE st_t SET v = 4 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
-- ROLLBACK TO restores the session value, refused.
BEGIN;
SAVEPOINT a;
SET LOCAL fencing.token = 14;
ROLLBACK TO SAVEPOINT a;
UPDATE st_t SET v = 4 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
RESET fencing.token;
SELECT v, fence FROM st_t;

-- set_config(..., false) is a session value too.
SELECT set_config('fencing.token', '15', false);
UPDATE st_t SET v = 5 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
RESET fencing.token;

-- A SET inside a block fences the block's writes, not the next transaction's.
BEGIN;
SET fencing.token = 16;
UPDATE st_t SET v = 6 WHERE id = 1;
COMMIT;
UPDATE st_t SET v = 7 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SHOW fencing.token;
RESET fencing.token;
SELECT v, fence FROM st_t;

-- set_config(..., true), fenced_update() and a function's SET clause work,
-- also while a session value is set.
BEGIN;
SELECT set_config('fencing.token', '17', true);
UPDATE st_t SET v = 8 WHERE id = 1;
COMMIT;
SET fencing.token = 5;
SELECT fenced_update('st_t', 18, '{"id": 1}', '{"v": 9}');
CREATE FUNCTION st_write(n int) RETURNS void LANGUAGE sql SET fencing.token = '19'
    AS $$ UPDATE st_t SET v = n WHERE id = 1 $$;
SELECT st_write(10);
RESET fencing.token;
SELECT st_write(11);
SELECT v, fence FROM st_t;

-- fencing.allow_session_token: superuser only; on, session tokens fence as
-- before (and a stale one is refused).
CREATE ROLE regress_st_role LOGIN;
GRANT SELECT, UPDATE ON st_t TO regress_st_role;
SET ROLE regress_st_role;
SET fencing.allow_session_token = on;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET fencing.allow_session_token = on;
SET fencing.token = 20;
UPDATE st_t SET v = 12 WHERE id = 1;
SET fencing.token = 19;
UPDATE st_t SET v = 13 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
RESET fencing.token;
RESET fencing.allow_session_token;

-- ALTER ROLE ... SET: a session value from the first statement on. Before
-- the library is loaded in the new session, SET LOCAL outside a block is
-- still only PostgreSQL's warning.
ALTER ROLE regress_st_role SET fencing.token = '30';
\c - regress_st_role
SET client_min_messages = notice;
SET LOCAL fencing.token = 31;
UPDATE st_t SET v = 14 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SHOW fencing.token;
BEGIN;
SET LOCAL fencing.token = 31;
UPDATE st_t SET v = 15 WHERE id = 1;
COMMIT;
-- RESET (or SET ... TO DEFAULT) inside a transaction brings back the role's
-- value: that is still the session's token, not one this transaction chose.
BEGIN;
RESET fencing.token;
SHOW fencing.token;
UPDATE st_t SET v = 16 WHERE id = 1;
ROLLBACK;
BEGIN;
SET LOCAL fencing.token TO DEFAULT;
UPDATE st_t SET v = 16 WHERE id = 1;
ROLLBACK;
-- Set before the library is loaded (a placeholder) by a role that may not set
-- it: dropped when the library loads.
\c - regress_st_role
SET fencing.allow_session_token = on;
UPDATE st_t SET v = 16 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SHOW fencing.allow_session_token;
-- A role may be granted fencing.allow_session_token for its dedicated
-- connections.
\c - :superuser
GRANT SET ON PARAMETER fencing.allow_session_token TO regress_st_role;
\c - regress_st_role
SET fencing.allow_session_token = on;
UPDATE st_t SET v = 16 WHERE id = 1;
SELECT v, fence FROM st_t;
\c - :superuser
REVOKE SET ON PARAMETER fencing.allow_session_token FROM regress_st_role;
ALTER ROLE regress_st_role RESET fencing.token;
-- A bad value SET LOCAL before the library is loaded (a placeholder) is this
-- transaction's token: every write that consults it fails (22P02).
\c - :superuser
BEGIN;
SET LOCAL fencing.token = 'not-a-token';
UPDATE st_t SET v = 0 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
DROP TABLE st_t, st_open;
DROP FUNCTION st_write(int);
DROP ROLE regress_st_role;
