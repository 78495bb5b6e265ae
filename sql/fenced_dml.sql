-- fenced_update(), fenced_delete(), fenced_upsert(): 0 rows when stale.
\set VERBOSITY default
CREATE TABLE inventory (item text PRIMARY KEY, stock int NOT NULL, note jsonb,
                        updated date, fence fencing_token);
INSERT INTO inventory VALUES ('SKU-001', 10, NULL, NULL, 33), ('SKU-002', 5, NULL, NULL, 33);

SELECT fenced_update('inventory', 34, '{"item": "SKU-001"}', '{"stock": 9}') AS fresh;
SELECT fenced_update('inventory', 33, '{"item": "SKU-001"}', '{"stock": 1}') AS stale;
SELECT fenced_update('inventory', 34, '{"item": "SKU-001"}', '{"stock": 8}') AS equal;
SELECT fenced_update('inventory', 35, '{"item": "nope"}', '{"stock": 8}') AS no_such_row;
SELECT * FROM inventory ORDER BY item;
-- Values convert with the column types' input functions; JSON null is SQL NULL.
SELECT fenced_update('inventory', 35, '{"item": "SKU-002"}',
                     '{"stock": "4", "note": {"by": "B", "tags": [1, 2]}, "updated": "2026-11-29"}');
SELECT fenced_update('inventory', 35, '{"item": "SKU-002"}', '{"note": null}');
-- An empty change set still raises the token.
SELECT fenced_update('inventory', 36, '{"item": "SKU-002"}', '{}');
SELECT * FROM inventory ORDER BY item;
-- Large tokens and hex input.
SELECT fenced_update('inventory', '0x100000022', '{"item": "SKU-002"}', '{"stock": 3}');
SELECT fence FROM inventory WHERE item = 'SKU-002';

-- fenced_delete: stale deletes nothing; a fresh one leaves a tombstone.
SELECT fenced_delete('inventory', 33, '{"item": "SKU-001"}') AS stale;
SELECT fenced_delete('inventory', 40, '{"item": "SKU-001"}') AS fresh;
SELECT fencing_high_water('inventory', '{"item": "SKU-001"}');

-- fenced_upsert: inserts, or updates on the primary key where the token allows.
SELECT fenced_upsert('inventory', 39, '{"item": "SKU-001", "stock": 1}') AS stale_reinsert;
SELECT fenced_upsert('inventory', 41, '{"item": "SKU-001", "stock": 7}') AS reinsert;
SELECT fenced_upsert('inventory', 40, '{"item": "SKU-001", "stock": 6}') AS stale_update;
SELECT fenced_upsert('inventory', 42, '{"item": "SKU-001", "stock": 6}') AS update;
SELECT fenced_upsert('inventory', 1, '{"item": "SKU-100", "stock": 1}') AS new_row;
SELECT item, stock, fence FROM inventory ORDER BY item;

-- Plans are cached per table and column set, and follow DDL.
ALTER TABLE inventory ADD COLUMN extra int;
SELECT fenced_update('inventory', 42, '{"item": "SKU-001"}', '{"stock": 5, "extra": 1}');
ALTER TABLE inventory RENAME COLUMN extra TO bonus;
SELECT fenced_update('inventory', 42, '{"item": "SKU-001"}', '{"stock": 5, "extra": 2}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 42, '{"item": "SKU-001"}', '{"stock": 5, "bonus": 2}');
ALTER TABLE inventory ALTER COLUMN bonus TYPE bigint;
SELECT fenced_update('inventory', 42, '{"item": "SKU-001"}', '{"stock": 5, "bonus": 9000000000}');
SELECT item, stock, bonus, fence FROM inventory WHERE item = 'SKU-001';

-- Errors: each gets a clear message and a proper SQLSTATE.
SELECT fenced_update('inventory', NULL, '{"item": "SKU-001"}', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update(NULL, 50, '{"item": "SKU-001"}', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{}', '{"stock": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '[1]', '{"stock": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{"item": "SKU-001"}', '"x"');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{"item": "SKU-001"}', '{"nope": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{"item": "SKU-001"}', '{"xmin": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{"item": "SKU-001"}', '{"stock": "many"}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{"item": "SKU-001"}', '{"stock": 99999999999}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{"item": "SKU-001"}', '{"fence": 51}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', -1, '{"item": "SKU-001"}', '{}');
\echo :LAST_ERROR_SQLSTATE
-- A key may use any column with an equality operator (here jsonb).
SELECT fenced_update('inventory', 50, '{"note": {}}', '{}') AS no_match;
CREATE TABLE plain (id int PRIMARY KEY, v int);
SELECT fenced_update('plain', 50, '{"id": 1}', '{"v": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_upsert('inventory', 50, '{}');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE no_pk (id int, fence fencing_token);
SELECT fenced_upsert('no_pk', 50, '{"id": 1}');
\echo :LAST_ERROR_SQLSTATE

-- No JSON key can inject SQL: names are identifiers, values are parameters.
SELECT fenced_update('inventory', 50, '{"item": "SKU-001"}',
                     '{"stock = 0, note = null --": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fenced_update('inventory', 50, '{"item": "x''; DROP TABLE inventory; --"}', '{"stock": 0}');
SELECT count(*) FROM inventory;

-- Column sets are cached by exact names: "a b" is not "a" and "b".
CREATE TABLE spaced (a int, b int, "a b" int, fence fencing_token, PRIMARY KEY (a, b));
INSERT INTO spaced VALUES (1, 2, 0, 1);
SELECT fenced_update('spaced', 2, '{"a": 1, "b": 2}', '{"a b": 5}');
SELECT fenced_update('spaced', 2, '{"a b": 5}', '{"a": 1}');
SELECT fenced_update('spaced', 2, '{"a": 1, "b": 2}', '{"a b": 6}');
SELECT * FROM spaced;
DROP TABLE spaced;

-- Only the target's stale rows are skipped: a write that a user trigger
-- cascades to another protected table is judged on its own and raises.
CREATE TABLE audit (id int PRIMARY KEY, fence fencing_token);
INSERT INTO audit VALUES (1, 100);
CREATE FUNCTION touch_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE audit SET fence = 50 WHERE id = 1;
    RETURN NEW;
END $$;
CREATE TRIGGER a_touch_audit BEFORE UPDATE ON inventory FOR EACH ROW EXECUTE FUNCTION touch_audit();
SELECT fenced_update('inventory', 100, '{"item": "SKU-001"}', '{"stock": 4}');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER a_touch_audit ON inventory;
DROP FUNCTION touch_audit();
DROP TABLE audit;

-- Quoted identifiers and a multi-column key.
CREATE TABLE "Odd Table" ("Key Part" int, "k2" text, "Value" int, "Fence" fencing_token,
                          PRIMARY KEY ("Key Part", k2));
INSERT INTO "Odd Table" VALUES (1, 'a', 0, 1);
SELECT fenced_update('"Odd Table"', 2, '{"Key Part": 1, "k2": "a"}', '{"Value": 7}');
SELECT fenced_update('"Odd Table"', 1, '{"Key Part": 1, "k2": "a"}', '{"Value": 8}');
SELECT * FROM "Odd Table";

-- The caller's privileges and RLS apply to the target.
CREATE ROLE regress_fencing_dml_user;
GRANT SELECT ON inventory TO regress_fencing_dml_user;
SET ROLE regress_fencing_dml_user;
SELECT fenced_update('inventory', 60, '{"item": "SKU-001"}', '{"stock": 1}');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT UPDATE ON inventory TO regress_fencing_dml_user;
ALTER TABLE inventory ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_sku2 ON inventory USING (item = 'SKU-002');
SET ROLE regress_fencing_dml_user;
SELECT fenced_update('inventory', 5000000000, '{"item": "SKU-001"}', '{"stock": 1}') AS hidden_by_rls;
SELECT fenced_update('inventory', 5000000000, '{"item": "SKU-002"}', '{"stock": 1}') AS visible;
RESET ROLE;
ALTER TABLE inventory DISABLE ROW LEVEL SECURITY;
DROP POLICY only_sku2 ON inventory;
REVOKE ALL ON inventory FROM regress_fencing_dml_user;
DROP ROLE regress_fencing_dml_user;

DROP TABLE inventory, plain, no_pk, "Odd Table";
