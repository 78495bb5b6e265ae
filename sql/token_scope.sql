-- A token is the current transaction's only if the transaction set it: a
-- RESET, SET ... TO DEFAULT or RESET ALL inside the transaction brings back
-- the session's default (ALTER ROLE ... SET here) and must not make it count.
-- An owner's fencing_allow_unfenced() inside a SECURITY DEFINER function or
-- trigger opens the table for the owner's writes only, not for the caller's
-- later ones.
\set VERBOSITY terse
SET client_min_messages = warning;
SELECT current_user AS superuser \gset
CREATE ROLE regress_ts_writer LOGIN;
CREATE ROLE regress_ts_owner LOGIN;
CREATE TABLE ts_t (id int PRIMARY KEY, v int, fence fencing_token);
CREATE TABLE ts_open (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('ts_open', require_token => false);
GRANT SELECT, UPDATE ON ts_t, ts_open TO regress_ts_writer;
BEGIN;
SET LOCAL fencing.token = 10;
INSERT INTO ts_t VALUES (1, 0);
INSERT INTO ts_open VALUES (1, 0);
COMMIT;

-- A role default token: every way of getting back to it inside a
-- transaction is still a session token.
ALTER ROLE regress_ts_writer SET fencing.token = '50';
\c - regress_ts_writer
SET client_min_messages = warning;
\set VERBOSITY terse
-- Load the library, so that the settings below are not placeholders.
SELECT fencing_token_epoch('0x100000001');
BEGIN;
RESET fencing.token;
UPDATE ts_t SET v = 1 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN;
SET LOCAL fencing.token = 60;
SET LOCAL fencing.token TO DEFAULT;
SHOW fencing.token;
UPDATE ts_t SET v = 2 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SET fencing.token = 61;
BEGIN;
RESET ALL;
SHOW fencing.token;
UPDATE ts_open SET v = 3 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- A SET inside the savepoint, rolled back to the default.
BEGIN;
SAVEPOINT s;
SET LOCAL fencing.token = 62;
ROLLBACK TO s;
SET fencing.token TO DEFAULT;
UPDATE ts_t SET v = 4 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- The transaction's own token still counts, after a RESET too.
BEGIN;
RESET fencing.token;
SET LOCAL fencing.token = 63;
UPDATE ts_t SET v = 5 WHERE id = 1;
COMMIT;
SELECT v, fence FROM ts_t;
\c - :superuser
SET client_min_messages = warning;
\set VERBOSITY terse
ALTER ROLE regress_ts_writer RESET fencing.token;

-- The owner's SECURITY DEFINER function that opens the table.
ALTER TABLE ts_t OWNER TO regress_ts_owner;
CREATE FUNCTION ts_fix() RETURNS void LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, public AS $$
BEGIN
    PERFORM fencing_allow_unfenced('public.ts_t', 'owner fix');
    UPDATE public.ts_t SET v = v + 100 WHERE id = 1;
END $$;
ALTER FUNCTION ts_fix() OWNER TO regress_ts_owner;
GRANT EXECUTE ON FUNCTION ts_fix() TO regress_ts_writer;
-- A table of the owner whose SECURITY DEFINER trigger opens ts_t.
CREATE TABLE ts_log (id int);
ALTER TABLE ts_log OWNER TO regress_ts_owner;
GRANT INSERT ON ts_log TO regress_ts_writer;
CREATE FUNCTION ts_log_trg() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, public AS $$
BEGIN
    PERFORM fencing_allow_unfenced('public.ts_t', 'log trigger');
    RETURN NEW;
END $$;
ALTER FUNCTION ts_log_trg() OWNER TO regress_ts_owner;
CREATE TRIGGER ts_log_trg AFTER INSERT ON ts_log FOR EACH ROW EXECUTE FUNCTION ts_log_trg();
\c - regress_ts_writer
SET client_min_messages = warning;
\set VERBOSITY terse
BEGIN;
SELECT ts_fix();
UPDATE ts_t SET v = 200 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN;
INSERT INTO ts_log VALUES (1);
UPDATE ts_t SET v = 201 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- The function's own write is admitted.
SELECT ts_fix();
SELECT v, fence FROM ts_t;
\c - :superuser
SET client_min_messages = warning;
-- The owner itself, after the definer function returns: admitted.
SET ROLE regress_ts_owner;
BEGIN;
SELECT ts_fix();
UPDATE ts_t SET v = v + 1 WHERE id = 1;
COMMIT;
RESET ROLE;
SELECT v, fence FROM ts_t;
-- A superuser's choice, and a foreign-key action that runs as the owner.
CREATE TABLE ts_parent (id int PRIMARY KEY);
INSERT INTO ts_parent VALUES (1);
BEGIN;
SET LOCAL fencing.token = 64;
ALTER TABLE ts_t ADD COLUMN pid int REFERENCES ts_parent ON DELETE SET NULL;
UPDATE ts_t SET pid = 1;
COMMIT;
BEGIN;
SELECT fencing_allow_unfenced('ts_t', 'superuser cleanup');
DELETE FROM ts_parent;
UPDATE ts_t SET v = v + 1;
COMMIT;
SELECT v, fence, pid FROM ts_t;
DROP TABLE ts_t, ts_open, ts_log, ts_parent;
DROP FUNCTION ts_fix(), ts_log_trg();
DROP ROLE regress_ts_writer, regress_ts_owner;
