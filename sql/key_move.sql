-- Row scope: the AFTER UPDATE OF <primary key columns> recheck of key moves
-- (zz_fencing_move_recheck). Installed with the guard, following the primary
-- key through DDL, dropped with the guard. The race it closes is in
-- test/isolation/specs/key_move_race.spec.
\set VERBOSITY default
SET client_min_messages = notice;

-- The extension's triggers on a table: name without the OID, events, columns.
CREATE FUNCTION fencing_triggers(rel regclass)
    RETURNS TABLE (name text, timing text, events text, columns text)
    LANGUAGE sql AS $$
    SELECT regexp_replace(t.tgname, '_[0-9]+$', ''),
           CASE WHEN t.tgtype & 2 <> 0 THEN 'before' ELSE 'after' END,
           concat_ws(' ', CASE WHEN t.tgtype & 4 <> 0 THEN 'insert' END,
                          CASE WHEN t.tgtype & 16 <> 0 THEN 'update' END,
                          CASE WHEN t.tgtype & 8 <> 0 THEN 'delete' END),
           (SELECT string_agg(a.attname, ', ' ORDER BY k.n)
              FROM unnest(t.tgattr::int2[]) WITH ORDINALITY k(attnum, n)
              JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attnum = k.attnum)
      FROM pg_trigger t
     WHERE t.tgrelid = rel AND t.tgname LIKE 'zz\_fencing\_%'
     ORDER BY 1
$$;

-- A primary key: the move recheck fires on UPDATE OF the key columns only.
CREATE TABLE km (region text, id int, v int, fence fencing_token, PRIMARY KEY (region, id));
SELECT * FROM fencing_triggers('km');
-- No primary key: no move recheck; it follows the key through ALTER TABLE.
CREATE TABLE kn (id int NOT NULL, code text NOT NULL, fence fencing_token);
SELECT * FROM fencing_triggers('kn');
ALTER TABLE kn ADD PRIMARY KEY (id);
SELECT * FROM fencing_triggers('kn');
ALTER TABLE kn DROP CONSTRAINT kn_pkey, ADD PRIMARY KEY (code);
SELECT * FROM fencing_triggers('kn');
-- The key's type can change, and its column can be dropped, without CASCADE.
ALTER TABLE kn ALTER COLUMN code TYPE varchar(20);
SELECT * FROM fencing_triggers('kn');
ALTER TABLE kn RENAME COLUMN code TO label;
SELECT * FROM fencing_triggers('kn');
ALTER TABLE kn DROP COLUMN label;
SELECT * FROM fencing_triggers('kn');
-- Other scopes have no rechecks; fencing_unprotect drops all.
SELECT fencing_protect('km', scope => 'table');
SELECT * FROM fencing_triggers('km');
SELECT fencing_protect('km');
SELECT fencing_unprotect('km');
SELECT * FROM fencing_triggers('km');
SELECT fencing_protect('km', strict => true);
SELECT * FROM fencing_triggers('km');
-- Partitions: every leaf carries it.
CREATE TABLE kp (id int PRIMARY KEY, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE kp_1 PARTITION OF kp FOR VALUES FROM (0) TO (100);
CREATE TABLE kp_2 (id int PRIMARY KEY, fence fencing_token);
ALTER TABLE kp ATTACH PARTITION kp_2 FOR VALUES FROM (100) TO (200);
SELECT * FROM fencing_triggers('kp_1');
SELECT * FROM fencing_triggers('kp_2');

-- Moves, one session: onto a deleted key with a stale token is refused (the
-- guard sees the tombstone first), with a fresh one admitted.
SELECT fencing_protect('km');
INSERT INTO km VALUES ('eu', 1, 0, 30), ('eu', 2, 0, 30);
BEGIN;
SET LOCAL fencing.token = 40;
DELETE FROM km WHERE id = 2;
COMMIT;
UPDATE km SET id = 2, fence = 35 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
UPDATE km SET id = 2, fence = 41 WHERE id = 1;
-- Updates naming a key column without changing it, and updates of other
-- columns, pass.
UPDATE km SET id = id, region = region, v = 1, fence = 41;
UPDATE km SET v = 2, fence = 41;
SELECT * FROM km ORDER BY region, id;

-- Strict: the transaction that raised a tombstone to its token may write
-- that key with it. A numeric key rewritten as an equal value with another
-- scale (1.0 -> 1.00) is a move in the guard's eyes: it leaves a tombstone on
-- key 1 and the recheck then finds that tombstone, raised here.
CREATE TABLE kd (id numeric PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('kd', strict => true);
INSERT INTO kd VALUES (1.0, 30);
BEGIN;
SET LOCAL fencing.token = 31;
UPDATE kd SET id = 1.00 WHERE id = 1.0;
COMMIT;
SELECT id, fence, fencing_high_water('kd', '{"id": 1}') FROM kd;

DROP TABLE km, kn, kp, kd;
DROP FUNCTION fencing_triggers(regclass);
