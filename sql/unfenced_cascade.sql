-- An owner's fencing_allow_unfenced() made inside a SECURITY DEFINER
-- function, or before SET ROLE to another role, must not admit a foreign-key
-- action caused by another role's write: the action runs as the table's
-- owner, but the write that caused it is the other role's, carrying no token.
\set VERBOSITY terse
SET client_min_messages = warning;
CREATE ROLE regress_uc_owner;
CREATE ROLE regress_uc_other;
GRANT CREATE ON SCHEMA public TO regress_uc_owner;
GRANT regress_uc_other TO regress_uc_owner;
SET ROLE regress_uc_owner;
CREATE TABLE uc_parent (id int PRIMARY KEY);
CREATE TABLE uc_child (id int PRIMARY KEY, pid int REFERENCES uc_parent ON DELETE CASCADE,
                       fence fencing_token);
SELECT fencing_protect('uc_child', require_token => true);
INSERT INTO uc_parent VALUES (1), (2), (3);
BEGIN;
SET LOCAL fencing.token = 10;
INSERT INTO uc_child VALUES (1, 1, 10), (2, 2, 10), (3, 3, 10);
COMMIT;
CREATE FUNCTION uc_maint() RETURNS void LANGUAGE sql SECURITY DEFINER
    SET search_path = public, pg_catalog
    AS $$ SELECT fencing_allow_unfenced('uc_child', 'maintenance') $$;
GRANT EXECUTE ON FUNCTION uc_maint() TO regress_uc_other;
GRANT SELECT, DELETE ON uc_parent TO regress_uc_other;
RESET ROLE;
-- Without any allowance the other role's cascade is refused (TF002).
SET ROLE regress_uc_other;
BEGIN;
DELETE FROM uc_parent WHERE id = 1;
\echo :SQLSTATE
ROLLBACK;
-- The owner's allowance made in its definer function: still TF002.
BEGIN;
SELECT uc_maint();
DELETE FROM uc_parent WHERE id = 2;
\echo :SQLSTATE
COMMIT;
RESET ROLE;
-- The owner's own allowance, then SET ROLE to the other role: still TF002.
SET ROLE regress_uc_owner;
BEGIN;
SELECT fencing_allow_unfenced('uc_child', 'maintenance');
SET LOCAL ROLE regress_uc_other;
DELETE FROM uc_parent WHERE id = 3;
\echo :SQLSTATE
COMMIT;
RESET ROLE;
SELECT id, pid, fence FROM uc_child ORDER BY id;
SET ROLE regress_uc_owner;
DROP TABLE uc_child, uc_parent;
DROP FUNCTION uc_maint();
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM regress_uc_owner;
DROP ROLE regress_uc_owner, regress_uc_other;
