-- Every way a fencing.token value is discarded. PostgreSQL frees the check
-- hook's parsed value ("extra") whenever it drops a value: when a SET replaces
-- it, at RESET, at commit and rollback of SET LOCAL, when a subtransaction is
-- released or rolled back, and when a function's SET clause or an aborted
-- set_config() is undone. From 16 on it frees it with guc_free(), so the hook
-- must allocate it with guc_malloc(): a malloc()ed value is an invalid pointer
-- there, an error inside abort and a PANIC at commit on an assert-enabled
-- server. Each step shows the value in force afterwards.
\set VERBOSITY terse
-- Load the library, so that the settings below are not placeholders.
SELECT fencing_token_epoch('0x100000001');
-- Session values: replaced, rejected, reset.
SET fencing.token = 1;
SET fencing.token = 2;
SET fencing.token = 'not a token';
SHOW fencing.token;
RESET fencing.token;
SHOW fencing.token;
-- SET LOCAL, committed and rolled back.
BEGIN;
SET LOCAL fencing.token = 3;
SET LOCAL fencing.token = 4;
COMMIT;
SHOW fencing.token;
BEGIN;
SET LOCAL fencing.token = 5;
ROLLBACK;
SHOW fencing.token;
-- A savepoint rolled back, and one released.
BEGIN;
SAVEPOINT a;
SET LOCAL fencing.token = 6;
ROLLBACK TO a;
SHOW fencing.token;
SAVEPOINT b;
SET LOCAL fencing.token = 7;
RELEASE b;
SHOW fencing.token;
COMMIT;
SHOW fencing.token;
-- Nested subtransactions over a session value: an inner rollback, an outer
-- release, then the whole transaction rolled back.
SET fencing.token = 8;
BEGIN;
SET LOCAL fencing.token = 9;
SAVEPOINT outer_sp;
SET fencing.token = 10;
SAVEPOINT inner_sp;
SET LOCAL fencing.token = 11;
SAVEPOINT innermost_sp;
SET fencing.token = 12;
ROLLBACK TO inner_sp;
SHOW fencing.token;
RELEASE outer_sp;
SHOW fencing.token;
ROLLBACK;
SHOW fencing.token;
-- A subtransaction aborted by an error after set_config(), and a SET inside
-- a subtransaction whose error is caught.
CREATE FUNCTION pg_temp.set_then_fail(token text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        PERFORM pg_catalog.set_config('fencing.token', token, true);
        RAISE EXCEPTION 'abort the subtransaction';
    EXCEPTION WHEN raise_exception THEN
        RETURN pg_catalog.current_setting('fencing.token');
    END;
END $$;
SELECT pg_temp.set_then_fail('13');
BEGIN;
SELECT pg_temp.set_then_fail('14');
SAVEPOINT c;
SELECT pg_catalog.set_config('fencing.token', '15', false);
SELECT 1 / 0;
ROLLBACK TO c;
SHOW fencing.token;
COMMIT;
SHOW fencing.token;
-- A function's SET clause, undone when the function returns and when it
-- fails.
CREATE FUNCTION pg_temp.with_token() RETURNS text LANGUAGE sql
    SET fencing.token = '16' AS $$SELECT pg_catalog.current_setting('fencing.token')$$;
CREATE FUNCTION pg_temp.with_token_fail() RETURNS int LANGUAGE sql
    SET fencing.token = '17' AS $$SELECT 1 / 0$$;
SELECT pg_temp.with_token();
SELECT pg_temp.with_token_fail();
SHOW fencing.token;
RESET fencing.token;
SHOW fencing.token;
