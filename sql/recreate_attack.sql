-- Attack pass on a fenced table dropped and re-created in one transaction:
-- the ways of taking the name that hold (savepoints, SET SCHEMA, a DO block,
-- DROP SCHEMA and DROP OWNED then re-create, two recreates, PREPARE
-- TRANSACTION), the misfits refused, and the internal functions closed to
-- other roles. After each, the deleted key's tombstone (30) must still be
-- there and a stale re-insert (token 12) refused.
\set VERBOSITY terse
SET client_min_messages = warning;
\ir test/lib/sql_try.sql
-- t with row 2 at token 20 and key 1 deleted at token 30.
CREATE FUNCTION pg_temp.fresh(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %s (id int PRIMARY KEY, v text, tok fencing_token)', t);
    EXECUTE format($q$INSERT INTO %s VALUES (1, 'one', 10), (2, 'two', 20)$q$, t);
    PERFORM set_config('fencing.token', '30', true);
    EXECUTE format('DELETE FROM %s WHERE id = 1', t);
END $$;
-- Whether t still refuses the stale re-insert of key 1, with key 1's HWM.
CREATE FUNCTION pg_temp.judge(t text) RETURNS TABLE (key1_hwm text, stale_insert text)
LANGUAGE plpgsql AS $$
BEGIN
    key1_hwm := fencing_high_water(t::regclass, '{"id": 1}');
    stale_insert := pg_temp.try(format(
        $q$SELECT set_config('fencing.token', '12', true); INSERT INTO %s VALUES (1, 'stale', 12)$q$, t));
    RETURN NEXT;
END $$;

-- Alembic's batch recreate of t: copy, DROP, RENAME the copy to t.
CREATE FUNCTION pg_temp.recreate(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE %s_new (id int PRIMARY KEY, v text, tok fencing_token)', t);
    EXECUTE format('INSERT INTO %s_new SELECT * FROM %s', t, t);
    EXECUTE format('DROP TABLE %s', t);
    EXECUTE format('ALTER TABLE %s_new RENAME TO %s', t, t);
END $$;

-- Savepoints: the DROP in a nested savepoint released, the rename once
-- rolled back to a savepoint and done again.
BEGIN; SELECT pg_temp.fresh('r1'); COMMIT;
BEGIN;
CREATE TABLE r1_new (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO r1_new SELECT * FROM r1;
SAVEPOINT a; SAVEPOINT b; DROP TABLE r1; RELEASE b; RELEASE a;
SAVEPOINT c; ALTER TABLE r1_new RENAME TO r1; ROLLBACK TO c;
SELECT table_name, scope, tombstones FROM fencing_dropped_state;
ALTER TABLE r1_new RENAME TO r1;
COMMIT;
SELECT * FROM pg_temp.judge('r1');

-- The DROP and a table of the name both rolled back to a savepoint: the
-- original table stands with its state.
BEGIN;
SAVEPOINT a;
DROP TABLE r1;
CREATE TABLE r1 (id int PRIMARY KEY, v text, tok fencing_token);
ROLLBACK TO a;
SELECT count(*) AS kept_after_rollback_to FROM fencing_dropped_state;
COMMIT;
SELECT (SELECT count(*) FROM r1) AS rows_left, * FROM pg_temp.judge('r1');

-- Moved into the name from another schema (SET SCHEMA).
BEGIN; SELECT pg_temp.fresh('r2'); COMMIT;
CREATE SCHEMA stage;
BEGIN;
CREATE TABLE stage.r2 (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO stage.r2 SELECT * FROM r2;
DROP TABLE r2;
ALTER TABLE stage.r2 SET SCHEMA public;
COMMIT;
SELECT * FROM pg_temp.judge('r2');

-- The whole recreate in one DO block (one statement).
BEGIN; SELECT pg_temp.fresh('r3'); COMMIT;
DO $$ BEGIN
    CREATE TABLE r3_new (id int PRIMARY KEY, v text, tok fencing_token);
    INSERT INTO r3_new SELECT * FROM r3;
    DROP TABLE r3;
    ALTER TABLE r3_new RENAME TO r3;
END $$;
SELECT * FROM pg_temp.judge('r3');

-- DROP SCHEMA ... CASCADE, then CREATE SCHEMA ... CREATE TABLE: the empty
-- table takes the dropped row 2 as a tombstone at its token.
CREATE SCHEMA s4;
BEGIN; SELECT pg_temp.fresh('s4.r4'); COMMIT;
BEGIN;
DROP SCHEMA s4 CASCADE;
CREATE SCHEMA s4 CREATE TABLE r4 (id int PRIMARY KEY, v text, tok fencing_token);
COMMIT;
SELECT fencing_high_water('s4.r4', '{"id": 2}') AS key2_hwm, * FROM pg_temp.judge('s4.r4');

-- DROP OWNED BY the table's owner, then the owner re-creates it.
CREATE ROLE regress_atk33_owner;
GRANT CREATE, USAGE ON SCHEMA public TO regress_atk33_owner;
SET ROLE regress_atk33_owner;
BEGIN; SELECT pg_temp.fresh('r5'); COMMIT;
RESET ROLE;
BEGIN;
-- The copy is not the owner's: DROP OWNED would drop it too.
CREATE TEMP TABLE r5_copy AS SELECT * FROM r5;
GRANT SELECT ON r5_copy TO regress_atk33_owner;
SET LOCAL ROLE regress_atk33_owner;
SET LOCAL client_min_messages = error;
DROP OWNED BY regress_atk33_owner;
CREATE TABLE r5 (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO r5 SELECT * FROM r5_copy;
COMMIT;
SELECT * FROM pg_temp.judge('r5');

-- The same name dropped and taken twice in one transaction.
BEGIN; SELECT pg_temp.fresh('r6'); COMMIT;
BEGIN;
SELECT pg_temp.recreate('r6');
SELECT pg_temp.recreate('r6');
COMMIT;
SELECT * FROM pg_temp.judge('r6');

-- PREPARE TRANSACTION after the adoption: COMMIT PREPARED keeps it.
BEGIN; SELECT pg_temp.fresh('r7'); COMMIT;
BEGIN;
SELECT pg_temp.recreate('r7');
PREPARE TRANSACTION 'recreate_attack_r7';
COMMIT PREPARED 'recreate_attack_r7';
SELECT * FROM pg_temp.judge('r7');

-- Misfits are refused (55000) and the transaction with them: the token
-- column renamed in the new table; another primary key while tombstones
-- exist.
BEGIN; SELECT pg_temp.fresh('r8'); COMMIT;
SELECT pg_temp.try($q$
    CREATE TABLE r8_new (id int PRIMARY KEY, v text, token2 fencing_token);
    INSERT INTO r8_new SELECT * FROM r8;
    DROP TABLE r8;
    ALTER TABLE r8_new RENAME TO r8$q$) AS token_column_renamed;
SELECT pg_temp.try($q$
    CREATE TABLE r8_new (id int, v text, tok fencing_token, PRIMARY KEY (id, v));
    INSERT INTO r8_new SELECT * FROM r8;
    DROP TABLE r8;
    ALTER TABLE r8_new RENAME TO r8$q$) AS primary_key_changed;
SELECT * FROM pg_temp.judge('r8');

-- Another role can neither run the internal steps nor discard or move the
-- owner's state.
CREATE ROLE regress_atk33_other;
GRANT CREATE, USAGE ON SCHEMA public TO regress_atk33_other;
SET ROLE regress_atk33_other;
SELECT pg_temp.try($q$SELECT fencing.keep_dropped_state('r8'::regclass::oid, true)$q$) AS keep_state,
       pg_temp.try($q$SELECT fencing.require_dropped_rows('r8'::regclass::oid, 'public.r8', 'tok', 'row')$q$) AS require_rows,
       pg_temp.try($q$SELECT fencing.adopt_dropped_state('r8'::regclass::oid)$q$) AS adopt_state,
       pg_temp.try($q$SELECT * FROM fencing.dropped_state$q$) AS read_kept,
       pg_temp.try($q$DROP TABLE r8$q$) AS drop_table;
CREATE TABLE other_t (id int PRIMARY KEY, v text, tok fencing_token);
SELECT pg_temp.try($q$SELECT fencing_transfer_state('r8', 'other_t')$q$) AS take_state,
       pg_temp.try($q$SELECT fencing_transfer_state('other_t', 'r8')$q$) AS give_state;
RESET ROLE;
-- The owner drops, then (SET ROLE in the same transaction) the other role
-- tries to discard the kept state.
BEGIN;
DROP TABLE r8;
SET LOCAL ROLE regress_atk33_other;
SELECT pg_temp.try($q$SELECT fencing_forget_dropped('public.r8')$q$) AS forget_other;
ROLLBACK;
SELECT * FROM pg_temp.judge('r8');

DROP TABLE r1, r2, r5, r3, s4.r4, r6, r7, r8, other_t;
DROP SCHEMA s4, stage;
DROP OWNED BY regress_atk33_owner, regress_atk33_other;
DROP ROLE regress_atk33_owner, regress_atk33_other;
