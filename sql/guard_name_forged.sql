-- A trigger of the table owner's own named like a guard, with a policy's
-- arguments naming a home that does not exist and another token column: the
-- DDL hooks read a leaf's policy from fencing.guard's triggers only. They
-- took it from this one: the next ALTER TABLE crashed the server (the home's
-- name), and the policy could have followed the other column.
SET client_min_messages = warning;
CREATE TABLE gf (id int PRIMARY KEY, other bigint, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE gf1 PARTITION OF gf FOR VALUES FROM (0) TO (100);
SELECT fencing_protect('gf');
CREATE FUNCTION gf_noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER zz_fencing_guard_0 AFTER INSERT ON gf1
    FOR EACH ROW EXECUTE FUNCTION gf_noop('v1 1 2 row error 0 1 0', '');
ALTER TABLE gf ADD COLUMN z int;
ALTER TABLE gf ALTER COLUMN other TYPE numeric;
SELECT token_column FROM fencing.protected WHERE relid = 'gf'::regclass;
SELECT * FROM fencing_verify_guards();
DROP TABLE gf;
DROP FUNCTION gf_noop();
