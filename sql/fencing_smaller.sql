-- Smaller DDL cases: the token column dropped, long row keys, temporary
-- tables, CREATE TABLE ... LIKE. Every write carries a token.
\set VERBOSITY default

-- 1. DROP COLUMN of the token column is refused while rows carry tokens
-- (row and resource scope) or the table has a table HWM (table scope): the
-- table would be unfenced, and a fencing_token column added again would
-- fence it from scratch, accepting lower tokens.
CREATE TABLE sm_inv (id int PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO sm_inv VALUES (1, 10, 50);
ALTER TABLE sm_inv DROP COLUMN fence;
\echo :LAST_ERROR_SQLSTATE
-- Nothing changed: still fenced, the stale write refused.
\set VERBOSITY terse
UPDATE sm_inv SET stock = 0, fence = 40 WHERE id = 1;
SELECT table_name, token_column, scope FROM fencing_protected WHERE table_name = 'sm_inv'::regclass;
-- Also with other subcommands, or through ALTER TABLE ... DROP ... CASCADE.
ALTER TABLE sm_inv ADD COLUMN note text, DROP COLUMN fence CASCADE;
\echo :LAST_ERROR_SQLSTATE
-- No row carries a token: the drop goes through, with the NOTICE.
CREATE TABLE sm_empty (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('sm_empty', require_token => false);
INSERT INTO sm_empty VALUES (1, NULL);
ALTER TABLE sm_empty DROP COLUMN fence;
-- fencing_unprotect() first: the drop goes through; a column added again
-- fences the table from scratch, as the owner chose.
SELECT fencing_unprotect('sm_inv');
ALTER TABLE sm_inv DROP COLUMN fence;
ALTER TABLE sm_inv ADD COLUMN fence fencing_token;
SELECT table_name, token_column, scope FROM fencing_protected WHERE table_name = 'sm_inv'::regclass;
DROP TABLE sm_inv, sm_empty;

-- Resource scope: the rows' tokens are what the guard judged; re-added, the
-- column would fence the table in row scope, not by resource.
CREATE TABLE sm_res (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('sm_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'sm_ns');
INSERT INTO sm_res VALUES (1, 'a', 50);
ALTER TABLE sm_res DROP COLUMN fence;
\echo :LAST_ERROR_SQLSTATE
UPDATE sm_res SET fence = 40 WHERE id = 1;
-- With no row left, the namespace's HWM (50) still counts: refused too.
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM sm_res; COMMIT;
ALTER TABLE sm_res DROP COLUMN fence;
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_resource_high_water('a', 'sm_ns') AS namespace_hwm;
DROP TABLE sm_res;

-- Table scope: refused while the table HWM exists, even with no row left.
CREATE TABLE sm_tab (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('sm_tab', scope => 'table');
INSERT INTO sm_tab VALUES (1, 50);
BEGIN; SET LOCAL fencing.token = 60; DELETE FROM sm_tab; COMMIT;
\set VERBOSITY default
ALTER TABLE sm_tab DROP COLUMN fence;
\set VERBOSITY terse
INSERT INTO sm_tab VALUES (2, 55);
DROP TABLE sm_tab;

-- Partitioned: the rows of the leaves count.
CREATE TABLE sm_part (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE sm_part_a PARTITION OF sm_part FOR VALUES IN ('a');
INSERT INTO sm_part VALUES (1, 'a', 5);
ALTER TABLE sm_part DROP COLUMN fence;
DROP TABLE sm_part;

-- DROP EXTENSION ... CASCADE still drops token columns with tokens in them
-- (in a database of its own).
SELECT current_database() AS sm_db \gset
CREATE DATABASE fencing_smaller_ext;
\c fencing_smaller_ext
SET client_min_messages = warning;
CREATE EXTENSION fencing;
CREATE TABLE sm_cascade (id int PRIMARY KEY, fence fencing_token);
INSERT INTO sm_cascade VALUES (1, 50);
DROP EXTENSION fencing CASCADE;
SELECT count(*) AS columns_left FROM pg_attribute
 WHERE attrelid = 'sm_cascade'::regclass AND attnum > 0 AND NOT attisdropped;
\c :sm_db
DROP DATABASE fencing_smaller_ext;

-- 2. Row-scope keys whose tombstone would not fit fencing.row_tombstone's
-- primary key are refused when they come in (54000, naming the table and
-- key columns), so that every row can be deleted. The limit is the B-tree's
-- (2704 bytes an entry, 8 kB pages): relid, then the text[] of the hex of
-- the key's binary form, uncompressed; 1332 bytes of bytea fit, 1333 not.
SET default_toast_compression = pglz;
CREATE TABLE sm_long (k bytea PRIMARY KEY, fence fencing_token);
CREATE FUNCTION sm_bytes(n int, seed int) RETURNS bytea LANGUAGE sql IMMUTABLE AS
$$ SELECT substr(decode(string_agg(md5((g + seed)::text), '' ORDER BY g), 'hex'), 1, n)
     FROM generate_series(1, n / 16 + 1) g $$;
INSERT INTO sm_long VALUES (sm_bytes(1332, 0), 10);
\set VERBOSITY default
INSERT INTO sm_long VALUES (sm_bytes(1333, 0), 10);
\set VERBOSITY terse
-- The largest one is deleted, its tombstone kept and judging a re-insert.
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM sm_long; COMMIT;
SELECT length(key[1]) AS hex_length, hwm FROM fencing.row_tombstone WHERE relid = 'sm_long'::regclass;
INSERT INTO sm_long VALUES (sm_bytes(1332, 0), 15);
-- A key moved onto a too-long value is refused too.
INSERT INTO sm_long VALUES ('\x01', 30);
BEGIN; SET LOCAL fencing.token = 31; UPDATE sm_long SET k = sm_bytes(1400, 1) WHERE k = '\x01'; COMMIT;
-- So is fencing_advance() of a too-long key without a row.
SELECT fencing_advance('sm_long', 40, jsonb_build_object('k', sm_bytes(1400, 2)));
-- A long text key that compresses is still refused: whether its tombstone
-- fits would depend on default_toast_compression at the DELETE.
CREATE TABLE sm_text (k text PRIMARY KEY, fence fencing_token);
INSERT INTO sm_text VALUES (repeat('a', 1332), 10);
INSERT INTO sm_text VALUES (repeat('a', 5000), 10);
-- Two key columns: both are named.
CREATE TABLE sm_two (a text, b text, fence fencing_token, PRIMARY KEY (a, b));
INSERT INTO sm_two VALUES (repeat('x', 700), repeat('y', 700), 10);
-- fencing_protect() of a table that already holds such a key is refused; so
-- is auto-protection by a fencing_token column added to it.
SET fencing.auto_protect = off;
CREATE TABLE sm_old (k bytea PRIMARY KEY, fence fencing_token);
INSERT INTO sm_old VALUES (sm_bytes(2000, 3), 10);
SELECT fencing_protect('sm_old');
ALTER TABLE sm_old DROP COLUMN fence;
RESET fencing.auto_protect;
ALTER TABLE sm_old ADD COLUMN fence fencing_token;
SELECT count(*) AS sm_old_protected FROM fencing_protected WHERE table_name = 'sm_old'::regclass;
-- A row stored before (here: through session_replication_role = replica,
-- which fires no guard) fails its DELETE and TRUNCATE with the same error,
-- not the internal index's.
SET session_replication_role = replica;
INSERT INTO sm_long VALUES (sm_bytes(2000, 4), 50);
RESET session_replication_role;
\set VERBOSITY default
BEGIN; SET LOCAL fencing.token = 60; DELETE FROM sm_long WHERE length(k) = 2000; COMMIT;
\set VERBOSITY terse
BEGIN; SET LOCAL fencing.token = 60; TRUNCATE sm_long; COMMIT;
SELECT length(k) FROM sm_long ORDER BY 1;
-- fencing_unprotect() lets it go.
SELECT fencing_unprotect('sm_long');
DELETE FROM sm_long WHERE length(k) = 2000;
DROP TABLE sm_long, sm_text, sm_two, sm_old;
DROP FUNCTION sm_bytes(int, int);
RESET default_toast_compression;

-- 3. A temporary table is never fenced: a fencing_token column in one is
-- announced as unfenced, and fencing_protect() refuses it.
\set VERBOSITY default
CREATE TEMP TABLE sm_temp (id int PRIMARY KEY, fence fencing_token);
\set VERBOSITY sqlstate
SELECT fencing_protect('sm_temp');
\set VERBOSITY terse
SELECT count(*) AS temp_protected FROM fencing_protected WHERE table_name = 'sm_temp'::regclass;
INSERT INTO sm_temp VALUES (1, 50);
UPDATE sm_temp SET fence = 40 WHERE id = 1;
DROP TABLE sm_temp;
-- With auto-protection off, nothing to announce.
SET fencing.auto_protect = off;
CREATE TEMP TABLE sm_temp2 (id int PRIMARY KEY, fence fencing_token);
RESET fencing.auto_protect;
DROP TABLE sm_temp2;

-- 4. CREATE TABLE ... (LIKE fenced ...) copies columns, not the policy: the
-- new table is fenced on its own in row scope with the defaults, whatever
-- the source's scope, strict, on_stale or require_token; a NOTICE says so
-- (not for a source whose policy is a new table's anyway).
CREATE TABLE sm_src_row (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('sm_src_row', require_token => false);
CREATE TABLE sm_src_strict (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('sm_src_strict', strict => true, on_stale => 'skip', require_token => false);
CREATE TABLE sm_like_row (LIKE sm_src_row INCLUDING ALL);
CREATE TABLE sm_like_strict (LIKE sm_src_strict INCLUDING ALL);
CREATE TABLE sm_src_res (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('sm_src_res', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'sm_like', strict => true, require_token => true);
CREATE TABLE sm_src_tab (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('sm_src_tab', scope => 'table', strict => true, require_token => false);
\set VERBOSITY default
CREATE TABLE sm_like_res (LIKE sm_src_res INCLUDING ALL);
\set VERBOSITY terse
CREATE TABLE sm_like_tab (LIKE sm_src_tab INCLUDING ALL);
CREATE TABLE sm_like_plain (LIKE sm_src_tab);
SET fencing.auto_protect = off;
CREATE TABLE sm_like_off (LIKE sm_src_tab INCLUDING ALL);
RESET fencing.auto_protect;
SELECT table_name, token_column, scope, resource_column, on_stale, strict
  FROM fencing_protected WHERE table_name::text LIKE 'sm_%' ORDER BY table_name::text;
-- The copies are fenced by their own rows, not by the source's HWMs.
INSERT INTO sm_src_tab VALUES (1, 50);
INSERT INTO sm_like_tab VALUES (1, 40);
UPDATE sm_like_tab SET fence = 30 WHERE id = 1;
SELECT * FROM sm_like_tab;
DROP TABLE sm_like_res, sm_like_tab, sm_like_plain, sm_like_off, sm_src_res, sm_src_tab,
    sm_like_row, sm_like_strict, sm_src_row, sm_src_strict;
