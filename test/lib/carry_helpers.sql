-- Helpers of the carry tests (sql/schema_rename_swap.sql, the files of
-- test/attack33-pending), included with \ir from the checkout's root.
-- pg_temp.copy_then(t, copy, swap): copies t (id, v, tok) into a new table
-- copy, then runs swap; 'ok' or the SQLSTATE it raised (the copy stays).
CREATE FUNCTION pg_temp.copy_then(t text, copy text, swap text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %s (id int PRIMARY KEY, v text, tok fencing_token)', copy);
    EXECUTE format('INSERT INTO %s SELECT id, v, tok FROM %s', copy, t);
    RETURN pg_temp.try(swap);
END $$;
-- pg_temp.fence_held(t): whether t refuses a stale re-INSERT of key 1
-- (deleted at token 30) at token 12.
CREATE FUNCTION pg_temp.fence_held(t text) RETURNS boolean LANGUAGE sql AS $$
    SELECT pg_temp.try(format($q$SET LOCAL fencing.token = 12; INSERT INTO %s VALUES (1, 'stale', 12)$q$, t))
           OPERATOR(pg_catalog.<>) 'ok'
$$;
