-- pg_temp.try(q): runs q, returns 'ok' or the SQLSTATE it raised (what a
-- test asserts, without the message), its effects rolled back on error.
-- Included with \ir test/lib/sql_try.sql: pg_regress feeds psql on stdin from
-- the checkout's root.
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
