-- DDL must never silently orphan or bypass a high-water mark (HWM): each
-- block below is refused (the DDL rolls back) or carries the state over, and
-- a stale write is still refused afterwards.

-- C6: generated token / resource / key columns are computed after BEFORE
-- triggers, so the guard would judge the old value.
CREATE TABLE ddl_gen (id int PRIMARY KEY, src bigint,
    fence fencing_token GENERATED ALWAYS AS (src::fencing_token) STORED);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pg_class WHERE relname = 'ddl_gen';
CREATE TABLE ddl_genr (id int PRIMARY KEY, src text,
    res text GENERATED ALWAYS AS (src) STORED, fence fencing_token);
SELECT fencing_protect('ddl_genr', scope => 'resource', resource_column => 'res',
                       resource_namespace => 'ddl-gen');
\echo :LAST_ERROR_SQLSTATE
SELECT scope FROM fencing_protected WHERE table_name = 'ddl_genr'::regclass;
CREATE TABLE ddl_genk (id int GENERATED ALWAYS AS (src * 2) STORED PRIMARY KEY, src int,
    fence fencing_token);
\echo :LAST_ERROR_SQLSTATE
-- ... nor made generated later (ADD GENERATED ... AS IDENTITY on the token).
CREATE TABLE ddl_ident (id int PRIMARY KEY, fence bigint NOT NULL);
SELECT fencing_protect('ddl_ident', 'fence');
INSERT INTO ddl_ident VALUES (1, 100);
ALTER TABLE ddl_ident ALTER COLUMN fence ADD GENERATED ALWAYS AS IDENTITY;
\echo :LAST_ERROR_SQLSTATE
UPDATE ddl_ident SET fence = 5;
\echo :LAST_ERROR_SQLSTATE

-- C9: a row-scope primary key with tombstones stays, and keeps its type but
-- for another integer width (its tombstones rekeyed: key_widen.sql).
CREATE TABLE ddl_mig (id int PRIMARY KEY, v int, fence fencing_token);
INSERT INTO ddl_mig VALUES (1, 1, 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM ddl_mig WHERE id = 1; COMMIT;
ALTER TABLE ddl_mig ALTER COLUMN id TYPE text;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE ddl_mig DROP CONSTRAINT ddl_mig_pkey, ADD PRIMARY KEY (v);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE ddl_mig DROP COLUMN id;
\echo :LAST_ERROR_SQLSTATE
-- Dropped alone, the key is held (Alembic's batch mode drops it before it
-- copies and drops the table): the table refuses writes until the same key
-- is back, and its columns stay.
ALTER TABLE ddl_mig DROP CONSTRAINT ddl_mig_pkey;
INSERT INTO ddl_mig VALUES (2, 2, 200);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE ddl_mig DROP COLUMN id;
ALTER TABLE ddl_mig ALTER COLUMN id TYPE bigint;
ALTER TABLE ddl_mig ADD PRIMARY KEY (v);
ALTER TABLE ddl_mig ADD PRIMARY KEY (id);
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'ddl_mig'::regclass AND attname = 'id';
INSERT INTO ddl_mig VALUES (1, 2, 50);
\echo :LAST_ERROR_SQLSTATE
-- Without tombstones the key may change; renames keep working.
CREATE TABLE ddl_fresh (id int PRIMARY KEY, fence fencing_token);
INSERT INTO ddl_fresh VALUES (1, 100);
ALTER TABLE ddl_fresh ALTER COLUMN id TYPE bigint;
ALTER TABLE ddl_fresh RENAME COLUMN id TO key;
ALTER TABLE ddl_fresh RENAME COLUMN fence TO epoch;
SELECT token_column FROM fencing_protected WHERE table_name = 'ddl_fresh'::regclass;
UPDATE ddl_fresh SET epoch = 99;
\echo :LAST_ERROR_SQLSTATE

-- C13: the resource column's type is kept (here: to one without a canonical text).
CREATE TABLE ddl_af (id int PRIMARY KEY, r text, fence fencing_token);
SELECT fencing_protect('ddl_af', scope => 'resource', resource_column => 'r',
                       resource_namespace => 'ddl-af');
INSERT INTO ddl_af VALUES (1, '2024-01-01 00:00:00+00', 100);
ALTER TABLE ddl_af ALTER COLUMN r TYPE timestamptz USING r::timestamptz;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE ddl_af ALTER COLUMN r TYPE varchar(40);
\echo :LAST_ERROR_SQLSTATE
UPDATE ddl_af SET fence = 50;
\echo :LAST_ERROR_SQLSTATE

-- M19: the token column is never rewritten, not even to its own type.
CREATE TABLE ddl_rw (id int PRIMARY KEY, fence fencing_token);
INSERT INTO ddl_rw VALUES (1, 100);
ALTER TABLE ddl_rw ALTER COLUMN fence TYPE fencing_token USING 0;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE ddl_rw ALTER COLUMN fence TYPE bigint;
\echo :LAST_ERROR_SQLSTATE
UPDATE ddl_rw SET fence = 1;
\echo :LAST_ERROR_SQLSTATE
SELECT fence, (SELECT count(*) FROM fencing.reset_log WHERE target LIKE '%ddl_rw%') AS resets
  FROM ddl_rw;

-- C14: an enum label that keys resource HWMs or tombstones cannot be renamed,
-- not even by the enum's owner.
CREATE ROLE regress_ddl_typeowner;
CREATE TYPE ddl_shard AS ENUM ('east', 'west');
ALTER TYPE ddl_shard OWNER TO regress_ddl_typeowner;
CREATE TABLE ddl_en (id int PRIMARY KEY, s ddl_shard, fence fencing_token);
SELECT fencing_protect('ddl_en', scope => 'resource', resource_column => 's',
                       resource_namespace => 'ddl-enum');
INSERT INTO ddl_en VALUES (1, 'east', 100);
SET ROLE regress_ddl_typeowner;
ALTER TYPE ddl_shard RENAME VALUE 'east' TO 'eu-east';
\echo :LAST_ERROR_SQLSTATE
ALTER TYPE ddl_shard ADD VALUE 'north';
RESET ROLE;
UPDATE ddl_en SET fence = 50;
\echo :LAST_ERROR_SQLSTATE
-- Row scope: tombstones key an enum primary key by its label.
CREATE TYPE ddl_color AS ENUM ('red', 'blue');
CREATE TABLE ddl_enk (c ddl_color PRIMARY KEY, fence fencing_token);
INSERT INTO ddl_enk VALUES ('red', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM ddl_enk; COMMIT;
ALTER TYPE ddl_color RENAME VALUE 'red' TO 'crimson';
\echo :LAST_ERROR_SQLSTATE
INSERT INTO ddl_enk VALUES ('red', 50);
\echo :LAST_ERROR_SQLSTATE
-- The check is by type: no label of such an enum can be renamed; labels of
-- an enum that keys nothing can.
ALTER TYPE ddl_color RENAME VALUE 'blue' TO 'navy';
\echo :LAST_ERROR_SQLSTATE
CREATE TYPE ddl_mood AS ENUM ('calm');
CREATE TABLE ddl_moods (id int PRIMARY KEY, m ddl_mood, fence fencing_token);
ALTER TYPE ddl_mood RENAME VALUE 'calm' TO 'serene';

-- M14: the resource column cannot be the token column.
CREATE TABLE ddl_rt (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ddl_rt', scope => 'resource', resource_column => 'fence',
                       resource_namespace => 'ddl-rt');
\echo :LAST_ERROR_SQLSTATE
SELECT scope FROM fencing_protected WHERE table_name = 'ddl_rt'::regclass;

-- M15: UNLOGGED tables lose their rows, and the HWMs they carry, in a crash.
CREATE UNLOGGED TABLE ddl_ul (id int PRIMARY KEY, fence fencing_token);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pg_class WHERE relname = 'ddl_ul';
ALTER TABLE ddl_rw SET UNLOGGED;
\echo :LAST_ERROR_SQLSTATE
SELECT relpersistence FROM pg_class WHERE oid = 'ddl_rw'::regclass;
SET fencing.auto_protect = off;
CREATE UNLOGGED TABLE ddl_ul (id int PRIMARY KEY, fence fencing_token);
RESET fencing.auto_protect;
SELECT fencing_protect('ddl_ul');
\echo :LAST_ERROR_SQLSTATE
UPDATE ddl_rw SET fence = 1;
\echo :LAST_ERROR_SQLSTATE

-- C11: plain inheritance into or out of a fenced table.
CREATE TABLE ddl_p2 (id int PRIMARY KEY, v int);
CREATE TABLE ddl_c2 (PRIMARY KEY (id)) INHERITS (ddl_p2);
ALTER TABLE ddl_p2 ADD COLUMN fence fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pg_attribute WHERE attrelid = 'ddl_p2'::regclass AND attname = 'fence';
CREATE TABLE ddl_par (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('ddl_par', scope => 'table');
INSERT INTO ddl_par VALUES (1, 1, 100);
CREATE TABLE ddl_chi () INHERITS (ddl_par);
\echo :LAST_ERROR_SQLSTATE
SET fencing.auto_protect = off;
CREATE TABLE ddl_chi () INHERITS (ddl_par);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE ddl_chi (id int NOT NULL, v int, fence fencing_token);
RESET fencing.auto_protect;
ALTER TABLE ddl_chi INHERIT ddl_par;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pg_inherits WHERE inhparent = 'ddl_par'::regclass;
UPDATE ddl_par SET fence = 50;
\echo :LAST_ERROR_SQLSTATE

-- C12: CREATE SCHEMA ... CREATE TABLE is fenced like CREATE TABLE.
CREATE SCHEMA ddl_app CREATE TABLE acct (id int PRIMARY KEY, bal int, fence fencing_token);
SELECT table_name, scope FROM fencing_protected WHERE table_name = 'ddl_app.acct'::regclass;
INSERT INTO ddl_app.acct VALUES (1, 1, 100);
UPDATE ddl_app.acct SET fence = 1 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE

-- C10: ATTACH PARTITION carries the attached table's tombstones (row scope)
-- and table HWM (table scope) into the parent's keys, keeping the maximum.
CREATE TABLE ddl_pp (id int, region text, v int, fence fencing_token, PRIMARY KEY (id, region))
    PARTITION BY LIST (region);
CREATE TABLE ddl_pp_eu PARTITION OF ddl_pp FOR VALUES IN ('eu');
CREATE TABLE ddl_pp_us (id int, region text, v int, fence fencing_token, PRIMARY KEY (id, region));
INSERT INTO ddl_pp_us VALUES (1, 'us', 1, 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM ddl_pp_us WHERE id = 1; COMMIT;
ALTER TABLE ddl_pp ATTACH PARTITION ddl_pp_us FOR VALUES IN ('us');
SELECT relid, hwm FROM fencing.row_tombstone WHERE relid IN ('ddl_pp'::regclass, 'ddl_pp_us'::regclass);
SELECT fencing_high_water('ddl_pp', '{"id": 1, "region": "us"}');
INSERT INTO ddl_pp VALUES (1, 'us', 1, 50);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE ddl_tp (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE ddl_tp_a PARTITION OF ddl_tp FOR VALUES IN ('a');
SELECT fencing_protect('ddl_tp', scope => 'table');
INSERT INTO ddl_tp VALUES (1, 'a', 70);
CREATE TABLE ddl_tp_b (id int, k text, fence fencing_token, PRIMARY KEY (id, k));
SELECT fencing_protect('ddl_tp_b', scope => 'table');
INSERT INTO ddl_tp_b VALUES (1, 'b', 100);
ALTER TABLE ddl_tp ATTACH PARTITION ddl_tp_b FOR VALUES IN ('b');
SELECT fencing_high_water('ddl_tp');
UPDATE ddl_tp SET fence = 50 WHERE k = 'b';
\echo :LAST_ERROR_SQLSTATE
UPDATE ddl_tp SET fence = 80 WHERE k = 'a';
\echo :LAST_ERROR_SQLSTATE
-- State the parent's scope cannot keep is refused, not dropped.
CREATE TABLE ddl_rp (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
SELECT fencing_protect('ddl_rp', scope => 'resource', resource_column => 'k',
                       resource_namespace => 'ddl-rp');
CREATE TABLE ddl_rp_x (id int, k text, fence fencing_token, PRIMARY KEY (id, k));
INSERT INTO ddl_rp_x VALUES (1, 'x', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM ddl_rp_x; COMMIT;
ALTER TABLE ddl_rp ATTACH PARTITION ddl_rp_x FOR VALUES IN ('x');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pg_inherits WHERE inhparent = 'ddl_rp'::regclass;
INSERT INTO ddl_rp_x VALUES (1, 'x', 50);
\echo :LAST_ERROR_SQLSTATE

-- M17: a detached partition stays fenced on its own, with the policy and the
-- HWMs it was judged by, so dropping its old parent resets nothing.
CREATE TABLE ddl_dp (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE ddl_dp1 PARTITION OF ddl_dp FOR VALUES IN ('a');
SELECT fencing_protect('ddl_dp', scope => 'table');
INSERT INTO ddl_dp VALUES (1, 'a', 100);
ALTER TABLE ddl_dp DETACH PARTITION ddl_dp1;
DROP TABLE ddl_dp;
SELECT table_name, scope FROM fencing_protected WHERE table_name = 'ddl_dp1'::regclass;
SELECT fencing_high_water('ddl_dp1');
UPDATE ddl_dp1 SET fence = 5;
\echo :LAST_ERROR_SQLSTATE
-- Row scope: the detached partition keeps the tombstones.
CREATE TABLE ddl_dr (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE ddl_dr1 PARTITION OF ddl_dr FOR VALUES IN ('a');
INSERT INTO ddl_dr VALUES (1, 'a', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM ddl_dr; COMMIT;
ALTER TABLE ddl_dr DETACH PARTITION ddl_dr1;
DROP TABLE ddl_dr;
INSERT INTO ddl_dr1 VALUES (1, 'a', 50);
\echo :LAST_ERROR_SQLSTATE

-- M9: tables and columns dropped by cascade leave no policy or state behind.
CREATE TYPE ddl_rowt AS (id int, fence fencing_token);
CREATE TABLE ddl_typed OF ddl_rowt (PRIMARY KEY (id));
INSERT INTO ddl_typed VALUES (1, 100);
BEGIN; SET LOCAL fencing.token = 200; DELETE FROM ddl_typed; COMMIT;
DROP TYPE ddl_rowt CASCADE;
SELECT count(*) AS orphan_policies FROM fencing.protected p
 WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid);
SELECT count(*) AS orphan_tombstones FROM fencing.row_tombstone t
 WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.relid);
CREATE TYPE ddl_rowt2 AS (id int, fence fencing_token);
CREATE TABLE ddl_typed2 OF ddl_rowt2 (PRIMARY KEY (id));
ALTER TYPE ddl_rowt2 DROP ATTRIBUTE fence CASCADE;
SELECT count(*) FROM fencing_protected WHERE table_name = 'ddl_typed2'::regclass;
INSERT INTO ddl_typed2 VALUES (2);
-- A typed table's token column keeps its type through ALTER TYPE too.
CREATE TYPE ddl_rowt3 AS (id int, fence fencing_token);
CREATE TABLE ddl_typed3 OF ddl_rowt3 (PRIMARY KEY (id));
INSERT INTO ddl_typed3 VALUES (1, 100);
ALTER TYPE ddl_rowt3 ALTER ATTRIBUTE fence TYPE bigint CASCADE;
\echo :LAST_ERROR_SQLSTATE
UPDATE ddl_typed3 SET fence = 5;
\echo :LAST_ERROR_SQLSTATE
-- DROP EXTENSION of an extension owning a protected table.
CREATE TABLE ddl_extowned (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ddl_extowned', scope => 'table');
INSERT INTO ddl_extowned VALUES (1, 100);
CREATE EXTENSION pg_stat_statements;
ALTER EXTENSION pg_stat_statements ADD TABLE ddl_extowned;
DROP EXTENSION pg_stat_statements;
SELECT count(*) AS orphan_policies FROM fencing.protected p
 WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid);
SELECT count(*) AS orphan_table_hwms FROM fencing.table_hwm t
 WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = t.relid);

DROP TABLE ddl_moods, ddl_genr, ddl_ident, ddl_mig, ddl_fresh, ddl_af, ddl_rw, ddl_en, ddl_enk, ddl_rt,
    ddl_ul, ddl_p2, ddl_c2, ddl_par, ddl_chi, ddl_pp, ddl_tp, ddl_rp, ddl_rp_x, ddl_dp1,
    ddl_dr1, ddl_typed2, ddl_typed3;
DROP TYPE ddl_mood, ddl_shard, ddl_color, ddl_rowt2, ddl_rowt3;
DROP SCHEMA ddl_app CASCADE;
DROP ROLE regress_ddl_typeowner;
