-- Tombstone keys: a deleted key must match its tombstone exactly when the
-- primary key's own equality says the keys are equal, whatever the session's
-- client_encoding, DateStyle, TimeZone, extra_float_digits or IntervalStyle.
-- Primary keys for which that cannot be guaranteed are refused in row scope.
\set VERBOSITY default
SET client_min_messages = notice;

-- text: deleted under UTF8, re-inserted with a stale token under LATIN1 (the
-- send form of text follows client_encoding). The key is U+00E9; the error is
-- shown as its SQLSTATE only, so this file stays ASCII.
CREATE TABLE k_text (k text PRIMARY KEY, v int, fence fencing_token);
INSERT INTO k_text VALUES (E'\u00e9', 1, 10), (E'caf\u00e9', 1, 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_text WHERE k = E'\u00e9'; COMMIT;
SET client_encoding = 'LATIN1';
\set VERBOSITY sqlstate
INSERT INTO k_text VALUES (E'\u00e9', 2, 50);
-- ... and the other way round: deleted under LATIN1, re-inserted under UTF8.
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_text WHERE k = E'caf\u00e9'; COMMIT;
SELECT fencing_high_water('k_text', '{"k": "\u00e9"}') AS latin1_client_hwm;
RESET client_encoding;
INSERT INTO k_text VALUES (E'caf\u00e9', 2, 50);
\set VERBOSITY default
SELECT fencing_high_water('k_text', '{"k": "caf\u00e9"}') AS utf8_client_hwm;
SELECT count(*) AS rows_left FROM k_text;
-- Equal bytes under either encoding: the 1.0 form (hex of the bytes).
SELECT key FROM fencing.row_tombstone WHERE relid = 'k_text'::regclass ORDER BY key;
-- A current token brings the key back.
INSERT INTO k_text VALUES (E'\u00e9', 3, 100);

-- varchar and name keys: the raw bytes too.
CREATE TABLE k_varchar (k varchar(10) PRIMARY KEY, fence fencing_token);
INSERT INTO k_varchar VALUES (E'\u00fc', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_varchar; COMMIT;
SET client_encoding = 'LATIN1';
\set VERBOSITY sqlstate
INSERT INTO k_varchar VALUES (E'\u00fc', 50);
\set VERBOSITY default
RESET client_encoding;

-- bpchar: equality ignores trailing spaces.
CREATE TABLE k_bpchar (k char(6) PRIMARY KEY, fence fencing_token);
CREATE TABLE k_bpchar_free (k bpchar PRIMARY KEY, fence fencing_token);
INSERT INTO k_bpchar VALUES ('ab', 10);
INSERT INTO k_bpchar_free VALUES ('ab  ', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_bpchar; DELETE FROM k_bpchar_free; COMMIT;
INSERT INTO k_bpchar VALUES ('ab ', 50);
INSERT INTO k_bpchar_free VALUES ('ab', 50);
SELECT fencing_high_water('k_bpchar_free', '{"k": "ab "}') AS bpchar_hwm;

-- float8 and float4: -0 = 0, and every NaN equals every NaN.
CREATE TABLE k_float8 (k float8 PRIMARY KEY, fence fencing_token);
CREATE TABLE k_float4 (k float4 PRIMARY KEY, fence fencing_token);
INSERT INTO k_float8 VALUES ('-0', 10), ('NaN', 10), (0.1, 10);
INSERT INTO k_float4 VALUES ('0', 10), ('NaN', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_float8; DELETE FROM k_float4; COMMIT;
INSERT INTO k_float8 VALUES ('0', 50);
-- A NaN computed by the CPU (sign bit set on x86) rather than parsed.
INSERT INTO k_float8 VALUES ('Infinity'::float8 - 'Infinity'::float8, 50);
SET extra_float_digits = -3;
INSERT INTO k_float8 VALUES (0.1, 50);
RESET extra_float_digits;
INSERT INTO k_float4 VALUES ('-0', 50);
INSERT INTO k_float4 VALUES ('Infinity'::float4 - 'Infinity'::float4, 50);
SELECT fencing_high_water('k_float8', '{"k": -0}') AS float8_hwm;

-- interval: compared as one span, with 30-day months and 24-hour days.
CREATE TABLE k_interval (k interval PRIMARY KEY, fence fencing_token);
INSERT INTO k_interval VALUES ('1 day', 10), ('1 mon', 10), ('-1 year 3 hours', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_interval; COMMIT;
INSERT INTO k_interval VALUES ('24 hours', 50);
INSERT INTO k_interval VALUES ('30 days', 50);
SET IntervalStyle = 'iso_8601';
INSERT INTO k_interval VALUES ('P-360DT3H', 50);
RESET IntervalStyle;
SELECT fencing_high_water('k_interval', '{"k": "720:00:00"}') AS interval_hwm;
SELECT fencing_reset('k_interval', '{"k": "86400 seconds"}') AS reset_one_day;
INSERT INTO k_interval VALUES ('1 day', 50);

-- numeric: 1.0 = 1.00.
CREATE TABLE k_numeric (k numeric PRIMARY KEY, fence fencing_token);
INSERT INTO k_numeric VALUES (1.0, 10), ('NaN', 10), ('Infinity', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_numeric; COMMIT;
INSERT INTO k_numeric VALUES (1.00, 50);
INSERT INTO k_numeric VALUES ('NaN', 50);
INSERT INTO k_numeric VALUES ('Infinity', 50);
SELECT fencing_high_water('k_numeric', '{"k": 1.000}') AS numeric_hwm;

-- timestamptz under another TimeZone, date under another DateStyle.
CREATE TABLE k_tstz (k timestamptz PRIMARY KEY, fence fencing_token);
CREATE TABLE k_date (k date PRIMARY KEY, fence fencing_token);
SET TimeZone = 'UTC';
INSERT INTO k_tstz VALUES ('2024-03-01 12:00:00+00', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_tstz; COMMIT;
SET TimeZone = 'Asia/Tokyo';
INSERT INTO k_tstz VALUES ('2024-03-01 21:00:00', 50);
SELECT fencing_high_water('k_tstz', '{"k": "2024-03-01T21:00:00+09:00"}') AS tstz_hwm;
RESET TimeZone;
SET DateStyle = 'ISO, MDY';
INSERT INTO k_date VALUES ('2024-03-04', 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_date; COMMIT;
SET DateStyle = 'SQL, DMY';
INSERT INTO k_date VALUES ('04/03/2024', 50);
RESET DateStyle;

-- Domains count as their base type; an enum key; a two-column key.
CREATE DOMAIN k_code AS text CHECK (VALUE <> '');
CREATE TYPE k_color AS ENUM ('red', 'green');
CREATE TABLE k_multi (c k_code, col k_color, n numeric, fence fencing_token,
                      PRIMARY KEY (c, col, n));
INSERT INTO k_multi VALUES (E'\u00e9', 'green', 2.50, 10);
BEGIN; SET LOCAL fencing.token = 100; DELETE FROM k_multi; COMMIT;
SET client_encoding = 'LATIN1';
\set VERBOSITY sqlstate
INSERT INTO k_multi VALUES (E'\u00e9', 'green', 2.5, 50);
\set VERBOSITY default
RESET client_encoding;

-- Refused in row scope: types without a canonical form, nondeterministic
-- collations, DEFERRABLE primary keys. Auto-protection refuses the CREATE ...
CREATE TABLE k_jsonb (k jsonb PRIMARY KEY, fence fencing_token);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE k_array (k int[] PRIMARY KEY, fence fencing_token);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE k_deferrable (k int PRIMARY KEY DEFERRABLE, fence fencing_token);
\echo :LAST_ERROR_SQLSTATE
-- ... and so does fencing_protect().
SET fencing.auto_protect = off;
CREATE TABLE k_jsonb (k jsonb PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('k_jsonb');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE k_deferrable (k int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED,
                           fence fencing_token);
SELECT fencing_protect('k_deferrable');
\echo :LAST_ERROR_SQLSTATE
-- Table scope does not need the key.
SELECT fencing_protect('k_jsonb', scope => 'table');
SELECT fencing_protect('k_deferrable', scope => 'table');
-- Nondeterministic collations need ICU (Debian's PostgreSQL 15 has it; a
-- server without ICU prints the \echo below instead and needs an alternative
-- expected file).
SELECT count(*) > 0 AS has_icu FROM pg_collation WHERE collprovider = 'i' \gset
\if :has_icu
CREATE COLLATION k_nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE k_nocase (k text COLLATE k_nocase PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('k_nocase');
\echo :LAST_ERROR_SQLSTATE
-- The same text type with a deterministic ICU collation is fine.
CREATE COLLATION k_icu (provider = icu, locale = 'und');
CREATE TABLE k_icu (k text COLLATE k_icu PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('k_icu');
DROP TABLE k_nocase, k_icu;
DROP COLLATION k_nocase;
DROP COLLATION k_icu;
\else
\echo 'skipped: this server has no ICU collations'
\endif
RESET fencing.auto_protect;

-- A later ADD PRIMARY KEY ... DEFERRABLE (or a refused key type) on a
-- protected row-scope table is refused and rolls back.
CREATE TABLE k_later (k int, fence fencing_token);
ALTER TABLE k_later ADD PRIMARY KEY (k) DEFERRABLE;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE k_later ADD COLUMN j jsonb, ADD PRIMARY KEY (j);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS k_later_constraints FROM pg_constraint WHERE conrelid = 'k_later'::regclass;
ALTER TABLE k_later ADD PRIMARY KEY (k);
-- Partitions of a row-scope table are checked too.
CREATE TABLE k_parted (k jsonb PRIMARY KEY, fence fencing_token) PARTITION BY LIST (k);
\echo :LAST_ERROR_SQLSTATE

-- Fail closed: a row-scope table whose key became unacceptable behind the
-- extension's back (event triggers disabled; or protected by 1.0) still
-- takes updates of its rows, but no write that needs a tombstone.
CREATE TABLE k_legacy (k int PRIMARY KEY, v int, fence fencing_token);
INSERT INTO k_legacy VALUES (1, 1, 10), (2, 2, 10);
ALTER EVENT TRIGGER fencing_ddl_command_end DISABLE;
ALTER TABLE k_legacy ALTER COLUMN k TYPE jsonb USING to_jsonb(k);
ALTER EVENT TRIGGER fencing_ddl_command_end ENABLE ALWAYS;  -- as 1.6 installs it
UPDATE k_legacy SET v = 3, fence = 11 WHERE k = '1';
UPDATE k_legacy SET v = 3, fence = 9 WHERE k = '1';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM k_legacy WHERE k = '1' AND set_config('fencing.token', '11', true) IS NOT NULL;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO k_legacy VALUES ('3', 3, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_high_water('k_legacy', '{"k": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_unprotect('k_legacy');
DELETE FROM k_legacy WHERE k = '1';
CREATE TABLE k_legacy_deferrable (k int PRIMARY KEY, fence fencing_token);
INSERT INTO k_legacy_deferrable VALUES (1, 10);
ALTER EVENT TRIGGER fencing_ddl_command_end DISABLE;
ALTER TABLE k_legacy_deferrable DROP CONSTRAINT k_legacy_deferrable_pkey,
    ADD PRIMARY KEY (k) DEFERRABLE;
ALTER EVENT TRIGGER fencing_ddl_command_end ENABLE ALWAYS;  -- as 1.6 installs it
DELETE FROM k_legacy_deferrable WHERE set_config('fencing.token', '10', true) IS NOT NULL;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO k_legacy_deferrable VALUES (2, 10);
\echo :LAST_ERROR_SQLSTATE

-- What row scope accepts and refuses, type by type.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['smallint', 'integer', 'bigint', 'oid', 'boolean', 'uuid', 'date',
        'time', 'timestamp', 'timestamptz', 'interval', 'real', 'double precision', 'numeric',
        'money', 'bytea', 'text', 'varchar', 'char(3)', 'name', 'k_color', 'k_code',
        'fencing_token', 'timetz', 'jsonb', 'inet', 'int4range', 'int[]', 'tsvector',
        'macaddr', 'bit(3)', '"char"'] LOOP
        BEGIN
            EXECUTE format('CREATE TABLE k_probe (k %s PRIMARY KEY, fence bigint)', t);
            PERFORM fencing_protect('k_probe', 'fence');
            RAISE NOTICE '%: accepted', t;
            DROP TABLE k_probe;
        EXCEPTION WHEN others THEN
            RAISE NOTICE '%: refused (%)', t, SQLSTATE;
        END;
    END LOOP;
END $$;

DROP TABLE k_text, k_varchar, k_bpchar, k_bpchar_free, k_float8, k_float4, k_interval,
    k_numeric, k_tstz, k_date, k_multi, k_jsonb, k_deferrable, k_later, k_legacy,
    k_legacy_deferrable;
DROP DOMAIN k_code;
DROP TYPE k_color;
-- fencing_reset() logged one reset above; later tests read the log.
DELETE FROM fencing.reset_log WHERE target = 'public.k_interval';
