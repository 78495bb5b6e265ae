-- Alembic's batch recreate (recreate='always'), as it emits it, of a
-- row-scope table with rows and no tombstones: DROP CONSTRAINT of the
-- primary key, CREATE the copy with the key, INSERT ... SELECT, DROP, RENAME.
-- The DROP keeps the rows (to check the copy) although the table had no
-- primary key left: the copy, whose key is the old one, takes the state
-- (it was refused with 55000, "its primary key (id integer) is not ()",
-- before a key-less source stopped requiring one), and a stale write is
-- refused afterwards.
\set VERBOSITY terse
SET client_min_messages = error;
\ir test/lib/sql_try.sql

CREATE TABLE inv (id int PRIMARY KEY, stock int, tok fencing_token);
INSERT INTO inv VALUES (1, 5, 10), (2, 7, 20);

BEGIN;
SELECT pg_temp.try($q$
    ALTER TABLE inv DROP CONSTRAINT inv_pkey;
    CREATE TABLE _alembic_tmp_inv (id int NOT NULL, stock int, tok fencing_token, extra int,
                                   CONSTRAINT inv_pkey PRIMARY KEY (id));
    INSERT INTO _alembic_tmp_inv (id, stock, tok) SELECT id, stock, tok FROM inv;
    DROP TABLE inv;
    ALTER TABLE _alembic_tmp_inv RENAME TO inv$q$) AS batch;
COMMIT;
SELECT count(*) AS extra_column FROM pg_attribute WHERE attrelid = 'inv'::regclass AND attname = 'extra';
SELECT scope FROM fencing_protected WHERE table_name = 'inv'::regclass;
SELECT pg_temp.try($q$SET LOCAL fencing.token = 15; UPDATE inv SET stock = 0 WHERE id = 2$q$) AS stale_update;
DROP TABLE inv;
