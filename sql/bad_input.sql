-- The bad-input catalogue: every SQL function of the extension, fed NULLs,
-- wrong types, unknown / dropped / unprotected tables, system / dropped /
-- generated columns, huge jsonb, tokens at the bounds, and quoted, mixed-case
-- and unicode identifiers. Each case runs in its own subtransaction and shows
-- its outcome as "ok: <first column>" or "<SQLSTATE>: <message>": never a
-- crash, never XX000 (checked at the end). A last query lists every function
-- of the extension the catalogue does not exercise: a new function fails this
-- test until it has entries here.
\set VERBOSITY terse
SET client_min_messages = warning;

CREATE FUNCTION pg_temp.try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    IF sql ~* '^\s*(SELECT|VALUES|TABLE|WITH)' THEN
        EXECUTE sql INTO r;
    ELSE
        EXECUTE sql;
    END IF;
    RETURN 'ok: ' || coalesce(left(r, 60), 'NULL');
EXCEPTION WHEN OTHERS THEN
    -- OIDs vary between runs; a message quoting a 10 MB input is cut short.
    RETURN SQLSTATE || ': ' || left(regexp_replace(SQLERRM, 'OID \d+', 'OID <n>', 'g'), 120);
END $$;

-- Fixtures: fenced tables in every scope, odd identifiers, an unprotected
-- table, a dropped table's OID, generated and dropped columns.
CREATE TABLE bi_row (id int PRIMARY KEY, v text, fence fencing_token);
CREATE TABLE bi_res (id int PRIMARY KEY, res text, v int, fence fencing_token);
SELECT fencing_protect('bi_res', scope => 'resource', resource_column => 'res',
                       resource_namespace => 'bi-ns');
CREATE TABLE bi_tab (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('bi_tab', scope => 'table');
INSERT INTO bi_row VALUES (1, 'a', 10);
INSERT INTO bi_res VALUES (1, 'r1', 0, 10);
INSERT INTO bi_tab VALUES (1, 0, 10);
CREATE TABLE bi_plain (id int PRIMARY KEY, v int);
CREATE TABLE bi_nopk (id int, fence fencing_token);
CREATE TABLE bi_gen (id int PRIMARY KEY, v int,
                     g int GENERATED ALWAYS AS (v * 2) STORED, fence fencing_token,
                     gres text GENERATED ALWAYS AS (v::text) STORED);
CREATE TABLE bi_drop (id int PRIMARY KEY, gone int, fence fencing_token);
ALTER TABLE bi_drop DROP COLUMN gone;
SET fencing.auto_protect = off;
CREATE TABLE bi_gentok (id int PRIMARY KEY, v bigint,
                        fence fencing_token GENERATED ALWAYS AS (v::fencing_token) STORED);
RESET fencing.auto_protect;
CREATE MATERIALIZED VIEW bi_mat AS SELECT 1 AS id, 1::fencing_token AS fence;
CREATE SEQUENCE bi_seq;
CREATE TABLE bi_dropped (id int PRIMARY KEY, fence fencing_token);
SELECT 'bi_dropped'::regclass::oid AS dropped_oid \gset
DROP TABLE bi_dropped;
CREATE SCHEMA "My Schema";
CREATE TABLE "My Schema"."Mixed Case" ("Key Col" int PRIMARY KEY, "Res.Col" text,
                                       "Fence ""Token""" fencing_token);
CREATE TABLE "ünïcødé" ("ïd" int PRIMARY KEY, "rés" text, "fénce" fencing_token);
CREATE TABLE "dot.ted""quote" ("a.b" int PRIMARY KEY, fence fencing_token);
INSERT INTO "My Schema"."Mixed Case" VALUES (1, 'R', 5);
INSERT INTO "ünïcødé" VALUES (1, 'é', 5);
INSERT INTO "dot.ted""quote" VALUES (1, 5);
-- Huge arguments: 100k keys, 10,000 levels of nesting, ~10 MB strings (md5
-- hex, so neither compresses away).
CREATE TABLE bi_big AS SELECT
    (SELECT jsonb_object_agg('k' || g, g) FROM generate_series(1, 100000) g) AS keys100k,
    (repeat('{"a": ', 10000) || '1' || repeat('}', 10000))::jsonb AS deep,
    (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 330000) g) AS s10mb;

CREATE TABLE catalogue (n serial, fn text, input text, sql text);

-- fencing_token type support and casts ---------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing_token_in(cstring)', 'NULL', $$SELECT fencing_token_in(NULL)$$),
('fencing_token_in(cstring)', '0', $$SELECT fencing_token_in('0')$$),
('fencing_token_in(cstring)', 'max', $$SELECT fencing_token_in('9223372036854775807')$$),
('fencing_token_in(cstring)', 'max + 1', $$SELECT fencing_token_in('9223372036854775808')$$),
('fencing_token_in(cstring)', '-1', $$SELECT fencing_token_in('-1')$$),
('fencing_token_in(cstring)', '-0', $$SELECT fencing_token_in('-0')$$),
('fencing_token_in(cstring)', '+1', $$SELECT fencing_token_in('+1')$$),
('fencing_token_in(cstring)', 'empty', $$SELECT fencing_token_in('')$$),
('fencing_token_in(cstring)', 'whitespace only', $$SELECT fencing_token_in('   ')$$),
('fencing_token_in(cstring)', 'surrounding whitespace', $$SELECT fencing_token_in(E'\t 34 \n')$$),
('fencing_token_in(cstring)', 'inner whitespace', $$SELECT fencing_token_in('3 4')$$),
('fencing_token_in(cstring)', 'hex max', $$SELECT fencing_token_in('0x7fffffffffffffff')$$),
('fencing_token_in(cstring)', 'hex max + 1', $$SELECT fencing_token_in('0x8000000000000000')$$),
('fencing_token_in(cstring)', 'hex 2^64', $$SELECT fencing_token_in('0x10000000000000000')$$),
('fencing_token_in(cstring)', 'hex, no digits', $$SELECT fencing_token_in('0x')$$),
('fencing_token_in(cstring)', 'hex, upper X', $$SELECT fencing_token_in('0X1F')$$),
('fencing_token_in(cstring)', 'hex, bad digit', $$SELECT fencing_token_in('0x1g')$$),
('fencing_token_in(cstring)', 'hex, negative', $$SELECT fencing_token_in('-0x1')$$),
('fencing_token_in(cstring)', 'leading zeros', $$SELECT fencing_token_in('000000000000000000000000034')$$),
('fencing_token_in(cstring)', 'exponent', $$SELECT fencing_token_in('1e3')$$),
('fencing_token_in(cstring)', 'decimal point', $$SELECT fencing_token_in('1.0')$$),
('fencing_token_in(cstring)', 'unicode digit', $$SELECT fencing_token_in('３４')$$),
('fencing_token_in(cstring)', '10 MB of digits', $$SELECT fencing_token_in(repeat('9', 10485760)::cstring)$$),
('fencing_token_out(fencing_token)', 'NULL', $$SELECT fencing_token_out(NULL)$$),
('fencing_token_out(fencing_token)', 'max', $$SELECT fencing_token_out(9223372036854775807)$$),
('fencing_token_out(fencing_token)', 'wrong type', $$SELECT fencing_token_out('abc'::text)$$),
('fencing_token_recv(internal)', 'NULL', $$SELECT fencing_token_recv(NULL)$$),
('fencing_token_send(fencing_token)', 'NULL', $$SELECT fencing_token_send(NULL)$$),
('fencing_token_send(fencing_token)', '0', $$SELECT fencing_token_send(0)$$),
('fencing_token_send(fencing_token)', '-1', $$SELECT fencing_token_send(-1)$$),
('fencing_token_eq(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_eq(NULL, 1)$$),
('fencing_token_eq(fencing_token,fencing_token)', 'NULL right', $$SELECT fencing_token_eq(1, NULL)$$),
('fencing_token_eq(fencing_token,fencing_token)', 'max = max', $$SELECT fencing_token_eq(9223372036854775807, '0x7fffffffffffffff')$$),
('fencing_token_eq(fencing_token,fencing_token)', 'wrong type', $$SELECT fencing_token_eq('a', 'b')$$),
('fencing_token_ne(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_ne(1, NULL)$$),
('fencing_token_ne(fencing_token,fencing_token)', '0 <> max', $$SELECT fencing_token_ne(0, 9223372036854775807)$$),
('fencing_token_lt(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_lt(NULL, NULL)$$),
('fencing_token_lt(fencing_token,fencing_token)', '0 < max', $$SELECT fencing_token_lt(0, 9223372036854775807)$$),
('fencing_token_lt(fencing_token,fencing_token)', 'max + 1', $$SELECT fencing_token_lt(0, 9223372036854775808)$$),
('fencing_token_le(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_le(NULL, 0)$$),
('fencing_token_le(fencing_token,fencing_token)', 'NULL right', $$SELECT fencing_token_le(0, NULL)$$),
('fencing_token_le(fencing_token,fencing_token)', '-1', $$SELECT fencing_token_le(-1, 0)$$),
('fencing_token_gt(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_gt(0, NULL)$$),
('fencing_token_gt(fencing_token,fencing_token)', 'max > 0', $$SELECT fencing_token_gt(9223372036854775807, 0)$$),
('fencing_token_ge(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_ge(NULL, NULL)$$),
('fencing_token_ge(fencing_token,fencing_token)', 'hex vs decimal', $$SELECT fencing_token_ge('0x22', ' 34 ')$$),
('fencing_token_cmp(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_cmp(NULL, 1)$$),
('fencing_token_cmp(fencing_token,fencing_token)', 'NULL right', $$SELECT fencing_token_cmp(1, NULL)$$),
('fencing_token_cmp(fencing_token,fencing_token)', 'max vs 0', $$SELECT fencing_token_cmp(9223372036854775807, 0)$$),
('fencing_token_sortsupport(internal)', 'NULL', $$SELECT fencing_token_sortsupport(NULL)$$),
('fencing_token_hash(fencing_token)', 'NULL', $$SELECT fencing_token_hash(NULL)$$),
('fencing_token_hash(fencing_token)', 'max', $$SELECT fencing_token_hash(9223372036854775807) = hashint8(9223372036854775807)$$),
('fencing_token_hash_extended(fencing_token,bigint)', 'NULL token', $$SELECT fencing_token_hash_extended(NULL, 0)$$),
('fencing_token_hash_extended(fencing_token,bigint)', 'NULL seed', $$SELECT fencing_token_hash_extended(1, NULL)$$),
('fencing_token_hash_extended(fencing_token,bigint)', 'seed -1', $$SELECT fencing_token_hash_extended(1, -1) = hashint8extended(1, -1)$$),
('fencing_token_smaller(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_smaller(NULL, 1)$$),
('fencing_token_smaller(fencing_token,fencing_token)', 'NULL right', $$SELECT fencing_token_smaller(1, NULL)$$),
('fencing_token_smaller(fencing_token,fencing_token)', '0, max', $$SELECT fencing_token_smaller(0, 9223372036854775807)$$),
('fencing_token_larger(fencing_token,fencing_token)', 'NULL', $$SELECT fencing_token_larger(1, NULL)$$),
('fencing_token_larger(fencing_token,fencing_token)', 'NULL left', $$SELECT fencing_token_larger(NULL, 1)$$),
('fencing_token_larger(fencing_token,fencing_token)', '0, max', $$SELECT fencing_token_larger(0, 9223372036854775807)$$),
('min(fencing_token)', 'all NULL', $$SELECT min(t) FROM (VALUES (NULL::fencing_token)) v(t)$$),
('min(fencing_token)', 'bounds', $$SELECT min(t) FROM (VALUES (0::fencing_token), (9223372036854775807)) v(t)$$),
('min(fencing_token)', 'wrong type', $$SELECT min(t::fencing_token) FROM (VALUES ('x')) v(t)$$),
('max(fencing_token)', 'all NULL', $$SELECT max(t) FROM (VALUES (NULL::fencing_token)) v(t)$$),
('max(fencing_token)', 'bounds', $$SELECT max(t) FROM (VALUES (0::fencing_token), ('0x7fffffffffffffff')) v(t)$$),
('fencing_token(bigint)', 'NULL', $$SELECT fencing_token(NULL::bigint)$$),
('fencing_token(bigint)', '-1', $$SELECT fencing_token(-1::bigint)$$),
('fencing_token(bigint)', 'min bigint', $$SELECT fencing_token((-9223372036854775807 - 1)::bigint)$$),
('fencing_token(bigint)', 'max', $$SELECT fencing_token(9223372036854775807::bigint)$$),
('fencing_token(integer)', 'NULL', $$SELECT fencing_token(NULL::int)$$),
('fencing_token(integer)', '-1', $$SELECT fencing_token(-1)$$),
('fencing_token(integer)', 'max int', $$SELECT fencing_token(2147483647)$$),
('fencing_token(smallint)', 'NULL', $$SELECT fencing_token(NULL::smallint)$$),
('fencing_token(smallint)', '-1', $$SELECT fencing_token(-1::smallint)$$),
('fencing_token(smallint)', '0', $$SELECT fencing_token(0::smallint)$$),
('fencing_token(numeric)', 'NULL', $$SELECT fencing_token(NULL::numeric)$$),
('fencing_token(numeric)', 'max', $$SELECT fencing_token(9223372036854775807::numeric)$$),
('fencing_token(numeric)', 'max + 1', $$SELECT fencing_token(9223372036854775808::numeric)$$),
('fencing_token(numeric)', '-1', $$SELECT fencing_token(-1::numeric)$$),
('fencing_token(numeric)', '-0.0', $$SELECT fencing_token(-0.0::numeric)$$),
('fencing_token(numeric)', 'fraction', $$SELECT fencing_token(1.5::numeric)$$),
('fencing_token(numeric)', 'integral with scale', $$SELECT fencing_token(34.000::numeric)$$),
('fencing_token(numeric)', 'NaN', $$SELECT fencing_token('NaN'::numeric)$$),
('fencing_token(numeric)', 'Infinity', $$SELECT fencing_token('Infinity'::numeric)$$),
('fencing_token(numeric)', '-Infinity', $$SELECT fencing_token('-Infinity'::numeric)$$),
('fencing_token(numeric)', '1e1000', $$SELECT fencing_token(('1e1000')::numeric)$$),
('fencing_token(numeric)', 'wrong type', $$SELECT fencing_token(1.5::float8)$$),
('fencing_token_epoch(fencing_token)', 'NULL', $$SELECT fencing_token_epoch(NULL)$$),
('fencing_token_epoch(fencing_token)', 'max', $$SELECT fencing_token_epoch(9223372036854775807)$$),
('fencing_token_epoch(fencing_token)', '-1', $$SELECT fencing_token_epoch(-1)$$),
('fencing_token_counter(fencing_token)', 'NULL', $$SELECT fencing_token_counter(NULL)$$),
('fencing_token_counter(fencing_token)', 'max', $$SELECT fencing_token_counter('0x7fffffffffffffff')$$),
('fencing_token_counter(fencing_token)', 'wrong type', $$SELECT fencing_token_counter('abc'::text)$$),
('fencing_token_from_zxid(bigint,bigint)', 'NULL epoch', $$SELECT fencing_token_from_zxid(NULL, 1)$$),
('fencing_token_from_zxid(bigint,bigint)', 'NULL counter', $$SELECT fencing_token_from_zxid(1, NULL)$$),
('fencing_token_from_zxid(bigint,bigint)', 'max', $$SELECT fencing_token_from_zxid(2147483647, 4294967295)$$),
('fencing_token_from_zxid(bigint,bigint)', 'epoch 2^31', $$SELECT fencing_token_from_zxid(2147483648, 0)$$),
('fencing_token_from_zxid(bigint,bigint)', 'counter 2^32', $$SELECT fencing_token_from_zxid(0, 4294967296)$$),
('fencing_token_from_zxid(bigint,bigint)', 'epoch -1', $$SELECT fencing_token_from_zxid(-1, 0)$$),
('fencing_token_from_zxid(bigint,bigint)', 'counter -1', $$SELECT fencing_token_from_zxid(0, -1)$$),
('fencing_token_from_zxid(bigint,bigint)', 'wrong type', $$SELECT fencing_token_from_zxid('a', 'b')$$);

-- Internal functions, called directly (superuser) ------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing.guard()', 'called directly', $$SELECT fencing.guard()$$),
('fencing.recheck()', 'called directly', $$SELECT fencing.recheck()$$),
('fencing.protected_upsert()', 'called directly', $$SELECT fencing.protected_upsert()$$),
('fencing.protected_sync()', 'called directly', $$SELECT fencing.protected_sync()$$),
('fencing.truncate_guard()', 'called directly', $$SELECT fencing.truncate_guard()$$),
('fencing.on_ddl_command_end()', 'called directly', $$SELECT fencing.on_ddl_command_end()$$),
('fencing.on_sql_drop()', 'called directly', $$SELECT fencing.on_sql_drop()$$),
('fencing.on_sql_drop_cascade()', 'called directly', $$SELECT fencing.on_sql_drop_cascade()$$),
('fencing.on_partition_drop()', 'called directly', $$SELECT fencing.on_partition_drop()$$),
('fencing.ddl_check_start()', 'called directly', $$SELECT fencing.ddl_check_start()$$),
('fencing.on_guard_ddl()', 'called directly', $$SELECT fencing.on_guard_ddl()$$),
('fencing.on_table_ddl(oid)', 'NULL', $$SELECT fencing.on_table_ddl(NULL)$$),
('fencing.on_table_ddl(oid)', 'OID 0', $$SELECT fencing.on_table_ddl(0)$$),
('fencing.on_table_ddl(oid)', 'dropped table', format($$SELECT fencing.on_table_ddl(%s)$$, :dropped_oid)),
('fencing.on_table_ddl(oid)', 'an index', $$SELECT fencing.on_table_ddl('bi_row_pkey'::regclass)$$),
('fencing.on_table_ddl(oid)', 'a catalog', $$SELECT fencing.on_table_ddl('pg_class'::regclass)$$),
('fencing.on_table_ddl(oid)', 'unicode table', $$SELECT fencing.on_table_ddl('"ünïcødé"'::regclass)$$),
('fencing.guard_status(regclass)', 'NULL', $$SELECT fencing.guard_status(NULL)$$),
('fencing.guard_status(regclass)', 'unprotected table', $$SELECT fencing.guard_status('bi_plain')$$),
('fencing.guard_status(regclass)', 'dropped table', format($$SELECT fencing.guard_status(%s)$$, :dropped_oid)),
('fencing.guard_status(regclass)', 'OID 0', $$SELECT fencing.guard_status(0)$$),
('fencing.guard_status(regclass)', 'mixed case', $$SELECT fencing.guard_status('"My Schema"."Mixed Case"')$$);

-- Table swaps, recreates and drops (fencing_transfer_state, kept state) ------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing_transfer_state(regclass,regclass)', 'NULL source', $$SELECT fencing_transfer_state(NULL, 'bi_row')$$),
('fencing_transfer_state(regclass,regclass)', 'NULL target', $$SELECT fencing_transfer_state('bi_row', NULL)$$),
('fencing_transfer_state(regclass,regclass)', 'dropped target', format($$SELECT fencing_transfer_state('bi_row', %s)$$, :dropped_oid)),
('fencing_transfer_state(regclass,regclass)', 'same table', $$SELECT fencing_transfer_state('bi_row', 'bi_row')$$),
('fencing_transfer_state(regclass,regclass)', 'unprotected source', $$SELECT fencing_transfer_state('bi_plain', 'bi_row')$$),
('fencing_transfer_state(regclass,regclass)', 'an index', $$SELECT fencing_transfer_state('bi_row', 'bi_row_pkey')$$),
('fencing_transfer_state(regclass,regclass)', 'a catalog', $$SELECT fencing_transfer_state('bi_row', 'pg_class')$$),
('fencing_transfer_state(regclass,regclass)', 'target without the columns', $$SELECT fencing_transfer_state('bi_res', 'bi_plain')$$),
('fencing_transfer_state(regclass,regclass)', 'mixed case', $$SELECT fencing_transfer_state('"My Schema"."Mixed Case"', 'bi_plain')$$),
('fencing_forget_dropped(text)', 'NULL', $$SELECT fencing_forget_dropped(NULL)$$),
('fencing_forget_dropped(text)', 'nothing kept', $$SELECT fencing_forget_dropped('public.bi_row')$$),
('fencing_forget_dropped(text)', 'bad identifier', $$SELECT fencing_forget_dropped('"unterminated')$$),
('fencing_forget_dropped(text)', 'three parts', $$SELECT fencing_forget_dropped('a.b.c')$$),
('fencing_forget_dropped(text)', 'empty', $$SELECT fencing_forget_dropped('')$$),
('fencing.column_type(oid,name)', 'NULL', $$SELECT fencing.column_type(NULL, NULL)$$),
('fencing.column_type(oid,name)', 'system column', $$SELECT fencing.column_type('bi_row'::regclass, 'ctid')$$),
('fencing.key_signature(oid)', 'no primary key', $$SELECT fencing.key_signature('bi_nopk'::regclass)$$),
('fencing.key_signature(oid)', 'OID 0', $$SELECT fencing.key_signature(0)$$),
('fencing.tombstone_key_signature(oid)', 'NULL', $$SELECT fencing.tombstone_key_signature(NULL)$$),
('fencing.state_misfit(oid,fencing.protected,text,text,text[],boolean)', 'NULLs', $$SELECT fencing.state_misfit(NULL, NULL, NULL, NULL, NULL, NULL)$$),
('fencing.install_policy(oid,fencing.protected)', 'NULLs', $$SELECT fencing.install_policy(NULL, NULL)$$),
('fencing.merge_table_state(oid,bigint,jsonb)', 'NULLs', $$SELECT fencing.merge_table_state(NULL, NULL, NULL)$$),
('fencing.merge_table_state(oid,bigint,jsonb)', 'bad floor', $$SELECT fencing.merge_table_state('bi_plain'::regclass, NULL, '{"floor": "x"}')$$),
('fencing.hold_key(oid)', 'NULL', $$SELECT fencing.hold_key(NULL)$$),
('fencing.hold_key(oid)', 'no primary key', $$SELECT fencing.hold_key('bi_nopk'::regclass)$$),
('fencing.follow_held_key(oid)', 'NULL', $$SELECT fencing.follow_held_key(NULL)$$),
('fencing.transfer_state_apply(oid,oid)', 'NULLs', $$SELECT fencing.transfer_state_apply(NULL, NULL)$$),
('fencing.require_dropped_rows(oid,text,text,text)', 'NULL', $$SELECT fencing.require_dropped_rows(NULL, NULL, NULL, NULL)$$),
('fencing.require_dropped_rows(oid,text,text,text)', 'nothing kept', $$SELECT fencing.require_dropped_rows('bi_row'::regclass, 'public.bi_row', 'fence', 'row')$$),
('fencing.keep_dropped_state(oid,boolean)', 'NULL', $$SELECT fencing.keep_dropped_state(NULL)$$),
('fencing.keep_dropped_state(oid,boolean)', 'unprotected table', $$SELECT fencing.keep_dropped_state('bi_plain'::regclass)$$),
('fencing.adopt_dropped_state(oid)', 'NULL', $$SELECT fencing.adopt_dropped_state(NULL)$$),
('fencing.key_detached()', 'called directly', $$SELECT fencing.key_detached()$$),
('fencing.swapped_out()', 'called directly', $$SELECT fencing.swapped_out()$$),
('fencing.on_ddl_adopt_dropped()', 'called directly', $$SELECT fencing.on_ddl_adopt_dropped()$$),
('fencing.protected_lock_tree()', 'called directly', $$SELECT fencing.protected_lock_tree()$$),
('fencing.note_dumped_policy()', 'called directly', $$SELECT fencing.note_dumped_policy()$$),
('fencing_reset_restored(regclass)', 'NULL', $$SELECT fencing_reset_restored(NULL)$$),
('fencing_reset_restored(regclass)', 'unprotected table', $$SELECT fencing_reset_restored('bi_plain')$$),
('fencing_reset_restored(regclass)', 'not restored', $$SELECT fencing_reset_restored('bi_row')$$),
('fencing_reset_restored(regclass)', 'a catalog', $$SELECT fencing_reset_restored('pg_class')$$),
('fencing_reset_restored(regclass)', 'dropped table', format($$SELECT fencing_reset_restored(%s)$$, :dropped_oid));

-- fencing_protect / fencing_unprotect ----------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'NULL target', $$SELECT fencing_protect(NULL)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'NULL token_column (its only one)', $$SELECT fencing_protect('bi_row', token_column => NULL)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'NULL scope', $$SELECT fencing_protect('bi_row', scope => NULL)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'NULL on_stale', $$SELECT fencing_protect('bi_row', on_stale => NULL)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'NULL strict', $$SELECT fencing_protect('bi_row', strict => NULL)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'NULL require_token', $$SELECT fencing_protect('bi_row', require_token => NULL)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'resource, NULL column', $$SELECT fencing_protect('bi_row', scope => 'resource')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'resource, NULL namespace', $$SELECT fencing_protect('bi_res', scope => 'resource', resource_column => 'res', resource_namespace => NULL)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'empty namespace', $$SELECT fencing_protect('bi_res', scope => 'resource', resource_column => 'res', resource_namespace => '')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', '10 MB namespace', $$SELECT fencing_protect('bi_res', scope => 'resource', resource_column => 'res', resource_namespace => (SELECT s10mb FROM bi_big))$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'unknown table', $$SELECT fencing_protect('no_such_table')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'dropped table', format($$SELECT fencing_protect(%s)$$, :dropped_oid)),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'OID 0', $$SELECT fencing_protect(0)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'an index', $$SELECT fencing_protect('bi_row_pkey')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'a view', $$SELECT fencing_protect('fencing_protected')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'a catalog', $$SELECT fencing_protect('pg_class', token_column => 'relpages')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'its own table', $$SELECT fencing_protect('fencing.table_hwm', token_column => 'hwm', scope => 'table')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'no token column', $$SELECT fencing_protect('bi_plain')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'non-token column', $$SELECT fencing_protect('bi_plain', token_column => 'v')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'unknown column', $$SELECT fencing_protect('bi_row', token_column => 'nope')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'system column ctid', $$SELECT fencing_protect('bi_row', token_column => 'ctid')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'system column xmin', $$SELECT fencing_protect('bi_row', token_column => 'xmin')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'system resource column', $$SELECT fencing_protect('bi_res', scope => 'resource', resource_column => 'tableoid', resource_namespace => 'bi-ns')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'dropped column', $$SELECT fencing_protect('bi_drop', token_column => '........pg.dropped.2........')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'dropped resource column', $$SELECT fencing_protect('bi_drop', scope => 'resource', resource_column => '........pg.dropped.2........', resource_namespace => 'bi-ns')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'generated resource column', $$SELECT fencing_protect('bi_gen', scope => 'resource', resource_column => 'gres', resource_namespace => 'bi-ns')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'generated token column', $$SELECT fencing_protect('bi_gen', token_column => 'g')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'generated fencing_token column', $$SELECT fencing_protect('bi_gentok')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'a materialized view', $$SELECT fencing_protect('bi_mat')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'a sequence', $$SELECT fencing_protect('bi_seq', token_column => 'last_value')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'token column = resource column', $$SELECT fencing_protect('bi_res', scope => 'resource', resource_column => 'fence', resource_namespace => 'bi-ns')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'row scope with a resource column', $$SELECT fencing_protect('bi_row', resource_column => 'v')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'table scope with a namespace', $$SELECT fencing_protect('bi_tab', scope => 'table', resource_namespace => 'bi-ns')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'empty column name', $$SELECT fencing_protect('bi_row', token_column => '')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'no primary key', $$SELECT fencing_protect('bi_nopk')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'bad scope', $$SELECT fencing_protect('bi_row', scope => 'ROW')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'empty scope', $$SELECT fencing_protect('bi_row', scope => '')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'bad on_stale', $$SELECT fencing_protect('bi_row', on_stale => 'ignore')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'wrong type strict', $$SELECT fencing_protect('bi_row', strict => 'maybe')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'wrong type target', $$SELECT fencing_protect(1.5)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', '10 MB table name', $$SELECT fencing_protect((SELECT s10mb FROM bi_big)::regclass)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'mixed case, quoted', $$SELECT fencing_protect('"My Schema"."Mixed Case"', token_column => 'Fence "Token"', scope => 'resource', resource_column => 'Res.Col', resource_namespace => 'Mixed NS ü')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'mixed case, unquoted', $$SELECT fencing_protect('My Schema.Mixed Case')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'unicode', $$SELECT fencing_protect('"ünïcødé"', token_column => 'fénce', strict => true)$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'dots and quotes', $$SELECT fencing_protect('"dot.ted""quote"', token_column => 'fence')$$),
('fencing_protect(regclass,name,text,name,text,text,boolean,boolean)', 'column name case', $$SELECT fencing_protect('"ünïcødé"', token_column => 'FÉNCE')$$),
('fencing_allow_unfenced(regclass,text)', 'NULL target', $$SELECT fencing_allow_unfenced(NULL, 'r')$$),
('fencing_allow_unfenced(regclass,text)', 'NULL reason', $$SELECT fencing_allow_unfenced('bi_row', NULL)$$),
('fencing_allow_unfenced(regclass,text)', 'empty reason', $$SELECT fencing_allow_unfenced('bi_row', '')$$),
('fencing_allow_unfenced(regclass,text)', 'blank reason', $$SELECT fencing_allow_unfenced('bi_row', E' \t\n')$$),
('fencing_allow_unfenced(regclass,text)', '10 MB reason', $$SELECT fencing_allow_unfenced('bi_row', s10mb) FROM bi_big$$),
('fencing_allow_unfenced(regclass,text)', 'unknown table', $$SELECT fencing_allow_unfenced('no_such_table', 'r')$$),
('fencing_allow_unfenced(regclass,text)', 'dropped table', format($$SELECT fencing_allow_unfenced(%s, 'r')$$, :dropped_oid)),
('fencing_allow_unfenced(regclass,text)', 'OID 0', $$SELECT fencing_allow_unfenced(0, 'r')$$),
('fencing_allow_unfenced(regclass,text)', 'unprotected table', $$SELECT fencing_allow_unfenced('bi_plain', 'r')$$),
('fencing_allow_unfenced(regclass,text)', 'an index', $$SELECT fencing_allow_unfenced('bi_row_pkey', 'r')$$),
('fencing_allow_unfenced(regclass,text)', 'a catalog', $$SELECT fencing_allow_unfenced('pg_class', 'r')$$),
('fencing_allow_unfenced(regclass,text)', 'mixed case', $$SELECT fencing_allow_unfenced('"My Schema"."Mixed Case"', 'r')$$),
('fencing_unprotect(regclass)', 'NULL', $$SELECT fencing_unprotect(NULL)$$),
('fencing_unprotect(regclass)', 'unknown table', $$SELECT fencing_unprotect('no_such_table')$$),
('fencing_unprotect(regclass)', 'dropped table', format($$SELECT fencing_unprotect(%s)$$, :dropped_oid)),
('fencing_unprotect(regclass)', 'OID 0', $$SELECT fencing_unprotect(0)$$),
('fencing_unprotect(regclass)', 'unprotected table', $$SELECT fencing_unprotect('bi_plain')$$),
('fencing_distribute(regclass,text,text)', 'NULL target', $$SELECT fencing_distribute(NULL)$$),
('fencing_distribute(regclass,text,text)', 'unknown table', $$SELECT fencing_distribute('no_such_table', 'k')$$),
('fencing_distribute(regclass,text,text)', 'OID 0', $$SELECT fencing_distribute(0)$$),
('fencing_distribute(regclass,text,text)', 'without Citus', $$SELECT fencing_distribute('bi_row', 'k')$$),
('fencing_unprotect(regclass)', 'a catalog', $$SELECT fencing_unprotect('pg_class')$$),
('fencing_unprotect(regclass)', 'wrong type', $$SELECT fencing_unprotect(true)$$),
('fencing_unprotect(regclass)', 'mixed case', $$SELECT fencing_unprotect('"My Schema"."Mixed Case"') AND fencing_protect('"My Schema"."Mixed Case"', token_column => 'Fence "Token"', scope => 'resource', resource_column => 'Res.Col', resource_namespace => 'Mixed NS ü') IS NOT NULL$$);

-- HWM reads and resets --------------------------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing_high_water(regclass,jsonb)', 'NULL target', $$SELECT fencing_high_water(NULL)$$),
('fencing_high_water(regclass,jsonb)', 'row, NULL key', $$SELECT fencing_high_water('bi_row', NULL)$$),
('fencing_high_water(regclass,jsonb)', 'row, JSON null key', $$SELECT fencing_high_water('bi_row', 'null')$$),
('fencing_high_water(regclass,jsonb)', 'row, array key', $$SELECT fencing_high_water('bi_row', '[1]')$$),
('fencing_high_water(regclass,jsonb)', 'row, scalar key', $$SELECT fencing_high_water('bi_row', '1')$$),
('fencing_high_water(regclass,jsonb)', 'row, empty key', $$SELECT fencing_high_water('bi_row', '{}')$$),
('fencing_high_water(regclass,jsonb)', 'row, key value null', $$SELECT fencing_high_water('bi_row', '{"id": null}')$$),
('fencing_high_water(regclass,jsonb)', 'row, key value text', $$SELECT fencing_high_water('bi_row', '{"id": "one"}')$$),
('fencing_high_water(regclass,jsonb)', 'row, key value fraction', $$SELECT fencing_high_water('bi_row', '{"id": 1.5}')$$),
('fencing_high_water(regclass,jsonb)', 'row, key value 2^31', $$SELECT fencing_high_water('bi_row', '{"id": 2147483648}')$$),
('fencing_high_water(regclass,jsonb)', 'row, key value object', $$SELECT fencing_high_water('bi_row', '{"id": {"a": 1}}')$$),
('fencing_high_water(regclass,jsonb)', 'row, key value array', $$SELECT fencing_high_water('bi_row', '{"id": [1]}')$$),
('fencing_high_water(regclass,jsonb)', 'row, unknown column', $$SELECT fencing_high_water('bi_row', '{"id": 1, "nope": 2}')$$),
('fencing_high_water(regclass,jsonb)', 'row, non-key column', $$SELECT fencing_high_water('bi_row', '{"v": "a"}')$$),
('fencing_high_water(regclass,jsonb)', 'row, system column', $$SELECT fencing_high_water('bi_row', '{"ctid": "(0,1)"}')$$),
('fencing_high_water(regclass,jsonb)', 'row, dropped column', $$SELECT fencing_high_water('bi_drop', '{"........pg.dropped.2........": 1}')$$),
('fencing_high_water(regclass,jsonb)', 'row, 100k keys', $$SELECT fencing_high_water('bi_row', (SELECT keys100k FROM bi_big))$$),
('fencing_high_water(regclass,jsonb)', 'row, deep nesting', $$SELECT fencing_high_water('bi_row', jsonb_build_object('id', (SELECT deep FROM bi_big)))$$),
('fencing_high_water(regclass,jsonb)', 'row, 10 MB key value', $$SELECT fencing_high_water('bi_row', jsonb_build_object('id', (SELECT s10mb FROM bi_big)))$$),
('fencing_high_water(regclass,jsonb)', 'row, 10 MB column name', $$SELECT fencing_high_water('bi_row', jsonb_build_object((SELECT s10mb FROM bi_big), 1))$$),
('fencing_high_water(regclass,jsonb)', 'row, ok', $$SELECT fencing_high_water('bi_row', '{"id": 1}')$$),
('fencing_high_water(regclass,jsonb)', 'row, key as text', $$SELECT fencing_high_water('bi_row', '{"id": "1"}')$$),
('fencing_high_water(regclass,jsonb)', 'resource, NULL key', $$SELECT fencing_high_water('bi_res')$$),
('fencing_high_water(regclass,jsonb)', 'resource, 10 MB value', $$SELECT fencing_high_water('bi_res', jsonb_build_object('res', (SELECT s10mb FROM bi_big)))$$),
('fencing_high_water(regclass,jsonb)', 'resource, ok', $$SELECT fencing_high_water('bi_res', '{"res": "r1"}')$$),
('fencing_high_water(regclass,jsonb)', 'table, with key', $$SELECT fencing_high_water('bi_tab', '{"id": 1}')$$),
('fencing_high_water(regclass,jsonb)', 'table, ok', $$SELECT fencing_high_water('bi_tab')$$),
('fencing_high_water(regclass,jsonb)', 'unknown table', $$SELECT fencing_high_water('no_such_table')$$),
('fencing_high_water(regclass,jsonb)', 'dropped table', format($$SELECT fencing_high_water(%s)$$, :dropped_oid)),
('fencing_high_water(regclass,jsonb)', 'OID 0', $$SELECT fencing_high_water(0, '{}')$$),
('fencing_high_water(regclass,jsonb)', 'unprotected table', $$SELECT fencing_high_water('bi_plain', '{"id": 1}')$$),
('fencing_high_water(regclass,jsonb)', 'wrong type key', $$SELECT fencing_high_water('bi_row', 'not json')$$),
('fencing_high_water(regclass,jsonb)', 'mixed case, quoted', $$SELECT fencing_high_water('"My Schema"."Mixed Case"', '{"Res.Col": "R"}')$$),
('fencing_high_water(regclass,jsonb)', 'mixed case, wrong case', $$SELECT fencing_high_water('"My Schema"."Mixed Case"', '{"res.col": "R"}')$$),
('fencing_high_water(regclass,jsonb)', 'unicode', $$SELECT fencing_high_water('"ünïcødé"', '{"ïd": 1}')$$),
('fencing_high_water(regclass,jsonb)', 'dots and quotes', $$SELECT fencing_high_water('"dot.ted""quote"', '{"a.b": 1}')$$),
('fencing_resource_high_water(text,text)', 'NULL resource', $$SELECT fencing_resource_high_water(NULL)$$),
('fencing_resource_high_water(text,text)', 'NULL namespace', $$SELECT fencing_resource_high_water('r1', NULL)$$),
('fencing_resource_high_water(text,text)', 'empty', $$SELECT fencing_resource_high_water('', '')$$),
('fencing_resource_high_water(text,text)', 'unknown namespace', $$SELECT fencing_resource_high_water('r1', 'no-such-ns')$$),
('fencing_resource_high_water(text,text)', '10 MB resource', $$SELECT fencing_resource_high_water((SELECT s10mb FROM bi_big), 'bi-ns')$$),
('fencing_resource_high_water(text,text)', 'unicode', $$SELECT fencing_resource_high_water('R', 'Mixed NS ü')$$),
('fencing_resource_high_water(text,text)', 'ok', $$SELECT fencing_resource_high_water('r1', 'bi-ns')$$),
('fencing_resource_high_water(text,text)', 'wrong type', $$SELECT fencing_resource_high_water(ARRAY['r1'])$$),
('fencing_reset(regclass,jsonb)', 'NULL target', $$SELECT fencing_reset(NULL)$$),
('fencing_reset(regclass,jsonb)', 'NULL key (the whole table)', $$SELECT fencing_reset('"dot.ted""quote"', NULL)$$),
('fencing_reset(regclass,jsonb)', 'row, JSON null key', $$SELECT fencing_reset('bi_row', 'null')$$),
('fencing_reset(regclass,jsonb)', 'row, array key', $$SELECT fencing_reset('bi_row', '[]')$$),
('fencing_reset(regclass,jsonb)', 'row, system column', $$SELECT fencing_reset('bi_row', '{"xmin": 1}')$$),
('fencing_reset(regclass,jsonb)', 'row, 100k keys', $$SELECT fencing_reset('bi_row', (SELECT keys100k FROM bi_big))$$),
('fencing_reset(regclass,jsonb)', 'row, 10 MB value', $$SELECT fencing_reset('bi_row', jsonb_build_object('id', (SELECT s10mb FROM bi_big)))$$),
('fencing_reset(regclass,jsonb)', 'resource, 10 MB value', $$SELECT fencing_reset('bi_res', jsonb_build_object('res', (SELECT s10mb FROM bi_big)))$$),
('fencing_reset(regclass,jsonb)', 'resource, deep value', $$SELECT fencing_reset('bi_res', jsonb_build_object('res', (SELECT deep FROM bi_big)))$$),
('fencing_reset(regclass,jsonb)', 'unknown table', $$SELECT fencing_reset('no_such_table')$$),
('fencing_reset(regclass,jsonb)', 'dropped table', format($$SELECT fencing_reset(%s)$$, :dropped_oid)),
('fencing_reset(regclass,jsonb)', 'unprotected table', $$SELECT fencing_reset('bi_plain')$$),
('fencing_reset(regclass,jsonb)', 'unicode, absent key', $$SELECT fencing_reset('"ünïcødé"', '{"ïd": 2}')$$),
('fencing_resource_reset(text,text)', 'NULL resource', $$SELECT fencing_resource_reset(NULL)$$),
('fencing_resource_reset(text,text)', 'NULL namespace', $$SELECT fencing_resource_reset('r1', NULL)$$),
('fencing_resource_reset(text,text)', 'empty', $$SELECT fencing_resource_reset('', '')$$),
('fencing_resource_reset(text,text)', '10 MB resource', $$SELECT fencing_resource_reset((SELECT s10mb FROM bi_big), 'bi-ns')$$),
('fencing_resource_reset(text,text)', 'unknown namespace', $$SELECT fencing_resource_reset('x', 'no-such-ns')$$),
('fencing_resource_reset(text,text)', 'wrong type', $$SELECT fencing_resource_reset(1, 2)$$);

-- Fenced DML --------------------------------------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'NULL target', $$SELECT fenced_update(NULL, 11, '{"id": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'NULL token', $$SELECT fenced_update('bi_row', NULL, '{"id": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'NULL key', $$SELECT fenced_update('bi_row', 11, NULL, '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'NULL changes', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', NULL)$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'token -1', $$SELECT fenced_update('bi_row', -1, '{"id": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'token max + 1', $$SELECT fenced_update('bi_row', 9223372036854775808, '{"id": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'token text junk', $$SELECT fenced_update('bi_row', 'eleven', '{"id": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'token empty', $$SELECT fenced_update('bi_row', '', '{"id": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'token 0 (stale)', $$SELECT fenced_update('bi_row', 0, '{"id": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'token hex', $$SELECT fenced_update('bi_row', ' 0xB ', '{"id": 1}', '{"v": "hex"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'empty key', $$SELECT fenced_update('bi_row', 11, '{}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'array key', $$SELECT fenced_update('bi_row', 11, '[1]', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'empty changes', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', '{}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'scalar changes', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', '"v"')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'changes the token column', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', '{"fence": 12}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'changes a system column', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', '{"ctid": "(0,1)"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'changes a dropped column', $$SELECT fenced_update('bi_drop', 11, '{"id": 1}', '{"........pg.dropped.2........": 1}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'changes a generated column', $$SELECT fenced_update('bi_gen', 11, '{"id": 1}', '{"g": 1}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'key on a system column', $$SELECT fenced_update('bi_row', 11, '{"xmin": 1}', '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'key on a generated column', $$SELECT fenced_update('bi_gen', 11, '{"g": 2}', '{"v": 1}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'changes, wrong value type', $$SELECT fenced_update('bi_res', 11, '{"id": 1}', '{"v": "many"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'changes, object value', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', '{"v": {"a": 1}}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'changes, unknown column', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', '{"nope": 1}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', '100k-key changes', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', (SELECT keys100k FROM bi_big))$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', '100k-key key', $$SELECT fenced_update('bi_row', 11, (SELECT keys100k FROM bi_big), '{"v": "x"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'deeply nested value', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', jsonb_build_object('v', (SELECT deep FROM bi_big)))$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', '10 MB value', $$SELECT fenced_update('bi_row', 11, '{"id": 1}', jsonb_build_object('v', (SELECT s10mb FROM bi_big)))$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', '10 MB resource value', $$SELECT fenced_update('bi_res', 11, '{"id": 1}', jsonb_build_object('res', (SELECT s10mb FROM bi_big)))$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'unknown table', $$SELECT fenced_update('no_such_table', 11, '{"id": 1}', '{"v": 1}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'dropped table', format($$SELECT fenced_update(%s, 11, '{"id": 1}', '{"v": 1}')$$, :dropped_oid)),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'unprotected table', $$SELECT fenced_update('bi_plain', 11, '{"id": 1}', '{"v": 1}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'a view', $$SELECT fenced_update('fencing_protected', 11, '{"table_name": 1}', '{"strict": true}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'wrong type key', $$SELECT fenced_update('bi_row', 11, 'id=1', '{"v": 1}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'mixed case, quoted', $$SELECT fenced_update('"My Schema"."Mixed Case"', 6, '{"Key Col": 1}', '{"Res.Col": "R"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'mixed case, wrong case', $$SELECT fenced_update('"My Schema"."Mixed Case"', 6, '{"key col": 1}', '{"Res.Col": "R"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'unicode', $$SELECT fenced_update('"ünïcødé"', 6, '{"ïd": 1}', '{"rés": "ñ"}')$$),
('fenced_update(regclass,fencing_token,jsonb,jsonb)', 'dots and quotes', $$SELECT fenced_update('"dot.ted""quote"', 6, '{"a.b": 1}', '{"a.b": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'NULL target', $$SELECT fenced_delete(NULL, 11, '{"id": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'NULL token', $$SELECT fenced_delete('bi_row', NULL, '{"id": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'NULL key', $$SELECT fenced_delete('bi_row', 11, NULL)$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'token -1', $$SELECT fenced_delete('bi_row', -1, '{"id": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'token max + 1', $$SELECT fenced_delete('bi_row', '9223372036854775808', '{"id": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'empty key', $$SELECT fenced_delete('bi_row', 11, '{}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'JSON null key', $$SELECT fenced_delete('bi_row', 11, 'null')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'key on a system column', $$SELECT fenced_delete('bi_row', 11, '{"ctid": "(0,1)"}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'key on a dropped column', $$SELECT fenced_delete('bi_drop', 11, '{"........pg.dropped.2........": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'key on a generated column', $$SELECT fenced_delete('bi_gen', 11, '{"g": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', '100k-key key', $$SELECT fenced_delete('bi_row', 11, (SELECT keys100k FROM bi_big))$$),
('fenced_delete(regclass,fencing_token,jsonb)', '10 MB key value', $$SELECT fenced_delete('bi_row', 11, jsonb_build_object('id', (SELECT s10mb FROM bi_big)))$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'unknown table', $$SELECT fenced_delete('no_such_table', 11, '{"id": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'dropped table', format($$SELECT fenced_delete(%s, 11, '{"id": 1}')$$, :dropped_oid)),
('fenced_delete(regclass,fencing_token,jsonb)', 'unprotected table', $$SELECT fenced_delete('bi_plain', 11, '{"id": 1}')$$),
('fenced_delete(regclass,fencing_token,jsonb)', 'unicode, absent key', $$SELECT fenced_delete('"ünïcødé"', 6, '{"ïd": 2}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'NULL target', $$SELECT fenced_upsert(NULL, 11, '{"id": 1}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'NULL token', $$SELECT fenced_upsert('bi_row', NULL, '{"id": 1}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'NULL row', $$SELECT fenced_upsert('bi_row', 11, NULL)$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'token -1', $$SELECT fenced_upsert('bi_row', -1, '{"id": 1}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'token max', $$SELECT fenced_upsert('bi_row', 9223372036854775807, '{"id": 9, "v": "max"}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'empty row', $$SELECT fenced_upsert('bi_row', 11, '{}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'array row', $$SELECT fenced_upsert('bi_row', 11, '[{"id": 1}]')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'row without the key', $$SELECT fenced_upsert('bi_row', 11, '{"v": "x"}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'key value null', $$SELECT fenced_upsert('bi_row', 11, '{"id": null, "v": "x"}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'a system column', $$SELECT fenced_upsert('bi_row', 11, '{"id": 1, "xmax": 1}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'a dropped column', $$SELECT fenced_upsert('bi_drop', 11, '{"id": 1, "........pg.dropped.2........": 1}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'a generated column', $$SELECT fenced_upsert('bi_gen', 11, '{"id": 1, "v": 1, "g": 2}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'the token column', $$SELECT fenced_upsert('bi_row', 11, '{"id": 1, "fence": 12}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', '100k keys', $$SELECT fenced_upsert('bi_row', 11, (SELECT keys100k FROM bi_big))$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'deep value', $$SELECT fenced_upsert('bi_row', 11, jsonb_build_object('id', 1, 'v', (SELECT deep FROM bi_big)))$$),
('fenced_upsert(regclass,fencing_token,jsonb)', '10 MB resource value', $$SELECT fenced_upsert('bi_res', 11, jsonb_build_object('id', 2, 'res', (SELECT s10mb FROM bi_big)))$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'unknown table', $$SELECT fenced_upsert('no_such_table', 11, '{"id": 1}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'dropped table', format($$SELECT fenced_upsert(%s, 11, '{"id": 1}')$$, :dropped_oid)),
('fenced_upsert(regclass,fencing_token,jsonb)', 'unprotected table', $$SELECT fenced_upsert('bi_plain', 11, '{"id": 1}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'wrong type row', $$SELECT fenced_upsert('bi_row', 11, 42)$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'unicode', $$SELECT fenced_upsert('"ünïcødé"', 7, '{"ïd": 3, "rés": "ü"}')$$),
('fenced_upsert(regclass,fencing_token,jsonb)', 'dots and quotes', $$SELECT fenced_upsert('"dot.ted""quote"', 7, '{"a.b": 2}')$$);

-- Guard verification, leases, advance ---------------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing_verify_guards(boolean)', 'NULL', $$SELECT count(*) FROM fencing_verify_guards(NULL)$$),
('fencing_verify_guards(boolean)', 'wrong type', $$SELECT count(*) FROM fencing_verify_guards('perhaps')$$),
('fencing_verify_guards(boolean)', 'repair', $$SELECT count(*) FROM fencing_verify_guards(true)$$),
('fencing_acquire(text,text,interval,interval,text)', 'NULL resource', $$SELECT fencing_acquire(NULL, 'h', '1 min')$$),
('fencing_acquire(text,text,interval,interval,text)', 'NULL holder', $$SELECT fencing_acquire('l1', NULL, '1 min')$$),
('fencing_acquire(text,text,interval,interval,text)', 'NULL ttl', $$SELECT fencing_acquire('l1', 'h', NULL)$$),
('fencing_acquire(text,text,interval,interval,text)', 'NULL namespace', $$SELECT fencing_acquire('l1', 'h', '1 min', NULL, NULL)$$),
('fencing_acquire(text,text,interval,interval,text)', 'zero ttl', $$SELECT fencing_acquire('l1', 'h', '0')$$),
('fencing_acquire(text,text,interval,interval,text)', 'negative ttl', $$SELECT fencing_acquire('l1', 'h', '-1 s')$$),
('fencing_acquire(text,text,interval,interval,text)', 'huge ttl', $$SELECT fencing_acquire('l1', 'h', '178000000 years') IS NOT NULL$$),
('fencing_acquire(text,text,interval,interval,text)', 'ttl of months', $$SELECT fencing_acquire('l2', 'h', '1 mon -30 days')$$),
('fencing_acquire(text,text,interval,interval,text)', 'negative wait', $$SELECT fencing_acquire('l1', 'h', '1 min', '-1 s')$$),
('fencing_acquire(text,text,interval,interval,text)', 'wrong type ttl', $$SELECT fencing_acquire('l1', 'h', 'soon')$$),
('fencing_acquire(text,text,interval,interval,text)', 'wrong type resource', $$SELECT fencing_acquire(1, 'h', '1 min')$$),
('fencing_acquire(text,text,interval,interval,text)', 'empty names', $$SELECT fencing_acquire('', '', '1 min', NULL, 'bi-ns') IS NOT NULL$$),
('fencing_acquire(text,text,interval,interval,text)', '10 MB resource', $$SELECT fencing_acquire((SELECT s10mb FROM bi_big), 'h', '1 min', NULL, 'bi-ns')$$),
('fencing_acquire(text,text,interval,interval,text)', '10 MB holder', $$SELECT fencing_acquire('l3', (SELECT s10mb FROM bi_big), '1 min', NULL, 'bi-ns') IS NOT NULL$$),
('fencing_acquire(text,text,interval,interval,text)', '10 MB namespace', $$SELECT fencing_acquire('l3', 'h', '1 min', NULL, (SELECT s10mb FROM bi_big))$$),
('fencing_acquire(text,text,interval,interval,text)', 'unicode', $$SELECT fencing_acquire('ressource ü', 'hôlder', '1 min', NULL, 'Mixed NS ü') IS NOT NULL$$),
('fencing_acquire(text,text,interval,interval,text)', 'taken, no wait', $$SELECT fencing_acquire('ressource ü', 'other', '1 min', NULL, 'Mixed NS ü')$$),
('fencing_renew(text,fencing_token,interval,text)', 'NULL resource', $$SELECT fencing_renew(NULL, 1, '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', 'NULL token', $$SELECT fencing_renew('l1', NULL, '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', 'NULL ttl', $$SELECT fencing_renew('l1', 1, NULL)$$),
('fencing_renew(text,fencing_token,interval,text)', 'NULL namespace', $$SELECT fencing_renew('l1', 1, '1 min', NULL)$$),
('fencing_renew(text,fencing_token,interval,text)', 'zero ttl', $$SELECT fencing_renew('l1', 1, '0')$$),
('fencing_renew(text,fencing_token,interval,text)', 'token 0', $$SELECT fencing_renew('l1', 0, '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', 'token -1', $$SELECT fencing_renew('l1', -1, '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', 'token max', $$SELECT fencing_renew('l1', 9223372036854775807, '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', 'token max + 1', $$SELECT fencing_renew('l1', 9223372036854775808, '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', 'token hex junk', $$SELECT fencing_renew('l1', '0xZZ', '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', 'unknown resource', $$SELECT fencing_renew('never-leased', 1, '1 min')$$),
('fencing_renew(text,fencing_token,interval,text)', '10 MB resource', $$SELECT fencing_renew((SELECT s10mb FROM bi_big), 1, '1 min', 'bi-ns')$$),
('fencing_release(text,fencing_token,text)', 'NULL resource', $$SELECT fencing_release(NULL, 1)$$),
('fencing_release(text,fencing_token,text)', 'NULL token', $$SELECT fencing_release('l1', NULL)$$),
('fencing_release(text,fencing_token,text)', 'NULL namespace', $$SELECT fencing_release('l1', 1, NULL)$$),
('fencing_release(text,fencing_token,text)', 'token -1', $$SELECT fencing_release('l1', -1)$$),
('fencing_release(text,fencing_token,text)', 'token 0', $$SELECT fencing_release('l1', 0)$$),
('fencing_release(text,fencing_token,text)', 'token empty', $$SELECT fencing_release('l1', '')$$),
('fencing_release(text,fencing_token,text)', 'unknown namespace', $$SELECT fencing_release('l1', 1, 'no-such-ns')$$),
('fencing_release(text,fencing_token,text)', 'unicode', $$SELECT fencing_release('ressource ü', 1, 'Mixed NS ü')$$),
('fencing_resource_advance(text,fencing_token,text)', 'NULL resource', $$SELECT fencing_resource_advance(NULL, 1)$$),
('fencing_resource_advance(text,fencing_token,text)', 'NULL token', $$SELECT fencing_resource_advance('a1', NULL)$$),
('fencing_resource_advance(text,fencing_token,text)', 'NULL namespace', $$SELECT fencing_resource_advance('a1', 1, NULL)$$),
('fencing_resource_advance(text,fencing_token,text)', 'token -1', $$SELECT fencing_resource_advance('a1', -1)$$),
('fencing_resource_advance(text,fencing_token,text)', 'token 0', $$SELECT fencing_resource_advance('a1', 0, 'bi-ns')$$),
('fencing_resource_advance(text,fencing_token,text)', 'token max', $$SELECT fencing_resource_advance('a-max', 9223372036854775807, 'bi-ns')$$),
('fencing_resource_advance(text,fencing_token,text)', 'token max + 1', $$SELECT fencing_resource_advance('a1', 9223372036854775808)$$),
('fencing_resource_advance(text,fencing_token,text)', 'token whitespace hex', $$SELECT fencing_resource_advance('a1', E' 0x10\t', 'bi-ns')$$),
('fencing_resource_advance(text,fencing_token,text)', 'empty names', $$SELECT fencing_resource_advance('', 1, '')$$),
('fencing_resource_advance(text,fencing_token,text)', '10 MB resource', $$SELECT fencing_resource_advance((SELECT s10mb FROM bi_big), 1, 'bi-ns')$$),
('fencing_resource_advance(text,fencing_token,text)', 'longest key that fits (2684 B)', $$SELECT fencing_resource_advance(left(s10mb, 2684), 1, 'bi-ns') FROM bi_big$$),
('fencing_resource_advance(text,fencing_token,text)', 'one byte longer (2685 B)', $$SELECT fencing_resource_advance(left(s10mb, 2685), 1, 'bi-ns') FROM bi_big$$),
('fencing_resource_advance(text,fencing_token,text)', '100 kB that compresses', $$SELECT fencing_resource_advance(repeat('x', 100000), 1, 'bi-ns')$$),
('fencing_resource_advance(text,fencing_token,text)', '10 MB namespace', $$SELECT fencing_resource_advance('a1', 1, (SELECT s10mb FROM bi_big))$$),
('fencing_resource_advance(text,fencing_token,text)', 'unicode', $$SELECT fencing_resource_advance('ŕésource', 3, 'Mixed NS ü')$$),
('fencing_resource_advance(text,fencing_token,text)', 'acquire at max', $$SELECT fencing_acquire('a-max', 'h', '1 min', NULL, 'bi-ns')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'NULL target', $$SELECT fencing_advance(NULL, 1)$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'NULL token', $$SELECT fencing_advance('bi_tab', NULL)$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'row, NULL key', $$SELECT fencing_advance('bi_row', 12)$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'row, JSON null key', $$SELECT fencing_advance('bi_row', 12, 'null')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'row, empty key', $$SELECT fencing_advance('bi_row', 12, '{}')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'row, system column key', $$SELECT fencing_advance('bi_row', 12, '{"ctid": "(0,1)"}')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'row, 100k keys', $$SELECT fencing_advance('bi_row', 12, (SELECT keys100k FROM bi_big))$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'row, 10 MB value', $$SELECT fencing_advance('bi_row', 12, jsonb_build_object('id', (SELECT s10mb FROM bi_big)))$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'resource, 10 MB value', $$SELECT fencing_advance('bi_res', 12, jsonb_build_object('res', (SELECT s10mb FROM bi_big)))$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'resource, deep value', $$SELECT fencing_advance('bi_res', 12, jsonb_build_object('res', (SELECT deep FROM bi_big)))$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'table, with a key', $$SELECT fencing_advance('bi_tab', 12, '{"id": 1}')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'token -1', $$SELECT fencing_advance('bi_tab', -1)$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'token 0', $$SELECT fencing_advance('bi_tab', 0)$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'token max + 1', $$SELECT fencing_advance('bi_tab', 9223372036854775808)$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'token empty', $$SELECT fencing_advance('bi_tab', ' ')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'unknown table', $$SELECT fencing_advance('no_such_table', 1)$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'dropped table', format($$SELECT fencing_advance(%s, 1)$$, :dropped_oid)),
('fencing_advance(regclass,fencing_token,jsonb)', 'unprotected table', $$SELECT fencing_advance('bi_plain', 1, '{"id": 1}')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'mixed case', $$SELECT fencing_advance('"My Schema"."Mixed Case"', 7, '{"Res.Col": "R"}')$$),
('fencing_advance(regclass,fencing_token,jsonb)', 'unicode', $$SELECT fencing_advance('"ünïcødé"', 8, '{"ïd": 1}')$$);

-- Writes through the guard, and the fencing.token setting ------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing.guard()', 'INSERT, token -1', $$INSERT INTO bi_row VALUES (20, 'x', -1)$$),
('fencing.guard()', 'INSERT, token max + 1', $$INSERT INTO bi_row VALUES (20, 'x', 9223372036854775808)$$),
('fencing.guard()', 'INSERT, token text', $$INSERT INTO bi_row VALUES (20, 'x', ' 0x14 ')$$),
('fencing.guard()', 'UPDATE, stale token', $$UPDATE bi_row SET fence = 1 WHERE id = 1$$),
('fencing.guard()', 'UPDATE, clearing the token', $$DO 'BEGIN PERFORM fencing_allow_unfenced(''bi_row'', ''clearing test''); UPDATE bi_row SET fence = NULL WHERE id = 1; END'$$),
('fencing.guard()', 'UPDATE, token max', $$UPDATE bi_tab SET fence = 9223372036854775807 WHERE id = 1$$),
('fencing.guard()', 'table at max, stale', $$UPDATE bi_tab SET fence = 9223372036854775806 WHERE id = 1$$),
('fencing.guard()', 'resource, 10 MB value', $$INSERT INTO bi_res SELECT 30, s10mb, 0, 11 FROM bi_big$$),
('fencing.guard()', 'resource, NULL value', $$INSERT INTO bi_res VALUES (31, NULL, 0, 11)$$),
('fencing.guard()', 'mixed case, stale', $$UPDATE "My Schema"."Mixed Case" SET "Fence ""Token""" = 1$$),
('fencing.guard()', 'unicode, stale', $$DELETE FROM "ünïcødé" WHERE "ïd" = 1 AND set_config('fencing.token', '1', true) IS NOT NULL$$),
('GUC fencing.token', '-1', $$SELECT set_config('fencing.token', '-1', true)$$),
('GUC fencing.token', 'max + 1', $$SELECT set_config('fencing.token', '9223372036854775808', true)$$),
('GUC fencing.token', 'hex max', $$SELECT set_config('fencing.token', '0x7FFFFFFFFFFFFFFF', true)$$),
('GUC fencing.token', 'junk', $$SELECT set_config('fencing.token', '12abc', true)$$),
('GUC fencing.token', 'whitespace', $$SELECT set_config('fencing.token', ' 12 ', true)$$),
('GUC fencing.token', 'empty (unset)', $$SELECT set_config('fencing.token', '', true)$$),
('GUC fencing.token', '10 MB', $$SELECT set_config('fencing.token', s10mb, true) FROM bi_big$$),
('GUC fencing.auto_protect', 'junk', $$SELECT set_config('fencing.auto_protect', 'sometimes', true)$$);

-- The statistics (1.2) -------------------------------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing.write_stats()', 'an argument', $$SELECT count(*) FROM fencing.write_stats(1)$$),
('fencing.write_stats()', 'no preload', $$SELECT count(*) FROM fencing.write_stats()$$),
('fencing.lease_stats()', 'an argument', $$SELECT count(*) FROM fencing.lease_stats('x')$$),
('fencing.lease_stats()', 'no preload', $$SELECT count(*) FROM fencing.lease_stats()$$),
('fencing.stats_info()', 'no preload', $$SELECT preloaded FROM fencing.stats_info()$$),
('fencing.stats_evicted()', 'no preload', $$SELECT fencing.stats_evicted()$$),
('fencing.stats_evicted()', 'an argument', $$SELECT fencing.stats_evicted(1)$$),
('fencing.stats_name_hash(text,text)', 'NULL, NULL', $$SELECT fencing.stats_name_hash(NULL, NULL)$$),
('fencing.stats_name_hash(text,text)', 'NULL resource', $$SELECT fencing.stats_name_hash('ns', NULL) IS NULL$$),
('fencing.stats_name_hash(text,text)', 'wrong type', $$SELECT fencing.stats_name_hash(1::int, 'r')$$),
('fencing.stats_name_hash(text,text)', '10 MB', $$SELECT fencing.stats_name_hash(s10mb, s10mb) IS NOT NULL FROM bi_big$$),
('fencing.stats_name_hash(text,text)', 'unicode', $$SELECT fencing.stats_name_hash('ünïcødé', '"Mixed Case"') IS NOT NULL$$),
('fencing_stats_reset()', 'an argument', $$SELECT fencing_stats_reset(true)$$),
('fencing_stats_reset()', 'no preload', $$SELECT fencing_stats_reset() IS NULL$$),
('GUC fencing.track_stats', 'junk', $$SELECT set_config('fencing.track_stats', 'sometimes', true)$$),
('GUC fencing.log_rejections', 'junk', $$SELECT set_config('fencing.log_rejections', '2', true)$$),
('GUC fencing.stats_max', 'at run time', $$SELECT set_config('fencing.stats_max', '10', true)$$),
-- Logical replication
('fencing_publish(name)', 'NULL', $$SELECT count(*) FROM fencing_publish(NULL)$$),
('fencing_publish(name)', 'no such publication', $$SELECT count(*) FROM fencing_publish('bi_nopub')$$),
('fencing_publish(name)', '10 MB', $$SELECT count(*) FROM bi_big, fencing_publish(s10mb::name)$$),
('fencing_publish(name)', 'unicode', $$SELECT count(*) FROM fencing_publish('"ünïcødé" pub')$$),
('fencing_publish(name)', 'wrong type', $$SELECT count(*) FROM fencing_publish(42)$$),
('fencing_check_subscription()', 'an argument', $$SELECT count(*) FROM fencing_check_subscription(true)$$),
('fencing_check_subscription()', 'no subscription', $$SELECT count(*) FROM fencing_check_subscription()$$),
('fencing.replica_keep_highest()', 'called directly', $$SELECT fencing.replica_keep_highest()$$),
('fencing.replicated_state()', 'called directly', $$SELECT count(*) FROM fencing.replicated_state()$$);

-- Retirement (1.5) ------------------------------------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing_enable_retirement(text,interval)', 'NULL namespace', $$SELECT fencing_enable_retirement(NULL::text)$$),
('fencing_enable_retirement(text,interval)', 'negative idle', $$SELECT fencing_enable_retirement('bi-ns', '-1 s')$$),
('fencing_enable_retirement(text,interval)', '10 MB namespace', $$SELECT fencing_enable_retirement(s10mb) FROM bi_big$$),
('fencing_enable_retirement(text,interval)', 'wrong type', $$SELECT fencing_enable_retirement('bi-ns', 5)$$),
('fencing_enable_namespace_retirement(text,interval)', 'NULL namespace', $$SELECT fencing_enable_namespace_retirement(NULL)$$),
('fencing_enable_namespace_retirement(text,interval)', 'negative idle', $$SELECT fencing_enable_namespace_retirement('bi-ns', '-1 s')$$),
('fencing_enable_retirement(regclass,interval)', 'NULL target', $$SELECT fencing_enable_retirement(NULL::regclass)$$),
('fencing_enable_retirement(regclass,interval)', 'unprotected table', $$SELECT fencing_enable_retirement('bi_plain'::regclass)$$),
('fencing_enable_retirement(regclass,interval)', 'resource scope', $$SELECT fencing_enable_retirement('bi_res'::regclass)$$),
('fencing_enable_retirement(regclass,interval)', 'table scope', $$SELECT fencing_enable_retirement('bi_tab'::regclass)$$),
('fencing_enable_retirement(regclass,interval)', 'dropped table', format($$SELECT fencing_enable_retirement(%s::regclass)$$, :dropped_oid)),
('fencing_enable_retirement(regclass,interval)', 'OID 0', $$SELECT fencing_enable_retirement(0::regclass)$$),
('fencing_enable_retirement(regclass,interval)', 'an index', $$SELECT fencing_enable_retirement('bi_row_pkey'::regclass)$$),
('fencing_enable_retirement(regclass,interval)', 'a catalog', $$SELECT fencing_enable_retirement('pg_class'::regclass)$$),
('fencing_disable_retirement(text)', 'NULL', $$SELECT fencing_disable_retirement(NULL::text) IS NULL$$),
('fencing_disable_retirement(text)', 'unknown namespace', $$SELECT fencing_disable_retirement('no-such-ns')$$),
('fencing_disable_retirement(regclass)', 'NULL', $$SELECT fencing_disable_retirement(NULL::regclass) IS NULL$$),
('fencing_disable_retirement(regclass)', 'unprotected table', $$SELECT fencing_disable_retirement('bi_plain'::regclass)$$),
('fencing_disable_retirement(regclass)', 'OID 0', $$SELECT fencing_disable_retirement(0::regclass)$$),
('fencing_retire(text,interval,bigint)', 'NULL namespace', $$SELECT fencing_retire(NULL::text, '1 s')$$),
('fencing_retire(text,interval,bigint)', 'NULL idle', $$SELECT fencing_retire('bi-ns', NULL)$$),
('fencing_retire(text,interval,bigint)', 'negative idle', $$SELECT fencing_retire('bi-ns', '-1 day')$$),
('fencing_retire(text,interval,bigint)', 'negative max', $$SELECT fencing_retire('bi-ns', '1 s', -1)$$),
('fencing_retire(text,interval,bigint)', 'not enabled', $$SELECT fencing_retire('bi-ns', '1 s')$$),
('fencing_retire(text,interval,bigint)', 'unknown namespace', $$SELECT fencing_retire('no-such-ns', '1 s')$$),
('fencing_retire(text,interval,bigint)', '10 MB namespace', $$SELECT fencing_retire(s10mb, '1 s') FROM bi_big$$),
('fencing_retire(text,interval,bigint)', 'wrong type', $$SELECT fencing_retire('bi-ns', 'soon')$$),
('fencing_retire(regclass,interval,bigint)', 'NULL target', $$SELECT fencing_retire(NULL::regclass, '1 s')$$),
('fencing_retire(regclass,interval,bigint)', 'NULL idle', $$SELECT fencing_retire('bi_row'::regclass, NULL)$$),
('fencing_retire(regclass,interval,bigint)', 'not enabled', $$SELECT fencing_retire('bi_row'::regclass, '1 s')$$),
('fencing_retire(regclass,interval,bigint)', 'resource scope', $$SELECT fencing_retire('bi_res'::regclass, '1 s')$$),
('fencing_retire(regclass,interval,bigint)', 'dropped table', format($$SELECT fencing_retire(%s::regclass, '1 s')$$, :dropped_oid)),
('fencing_retire(regclass,interval,bigint)', 'OID 0', $$SELECT fencing_retire(0::regclass, '1 s')$$),
('fencing_retire(regclass,interval,bigint)', 'mixed case', $$SELECT fencing_retire('"My Schema"."Mixed Case"'::regclass, '1 s')$$),
('fencing_retire_due(bigint)', 'NULL', $$SELECT fencing_retire_due(NULL) >= 0$$),
('fencing_retire_due(bigint)', 'negative', $$SELECT fencing_retire_due(-1)$$),
('fencing_retire_due(bigint)', 'zero', $$SELECT fencing_retire_due(0)$$),
('fencing_retire_due(bigint)', 'wrong type', $$SELECT fencing_retire_due('many')$$),
('GUC fencing.retire_batch_size', 'zero', $$SELECT set_config('fencing.retire_batch_size', '0', true)$$),
('GUC fencing.retire_batch_size', 'junk', $$SELECT set_config('fencing.retire_batch_size', 'lots', true)$$),
('fencing.on_floor_drop()', 'called directly', $$SELECT fencing.on_floor_drop()$$);
-- Leases and fenced DML (1.5) ----------------------------------------------------
INSERT INTO catalogue (fn, input, sql) VALUES
('fencing_acquire_all(text[],text,interval,interval,text)', 'NULL resources', $$SELECT fencing_acquire_all(NULL, 'h', '1 min')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'NULL element', $$SELECT fencing_acquire_all(ARRAY['m1', NULL], 'h', '1 min')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'duplicate', $$SELECT fencing_acquire_all(ARRAY['m1', 'm2', 'm1'], 'h', '1 min')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'two dimensions', $$SELECT fencing_acquire_all(ARRAY[['m1'], ['m2']], 'h', '1 min')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'empty array', $$SELECT fencing_acquire_all('{}', 'h', '1 min')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'NULL holder', $$SELECT fencing_acquire_all(ARRAY['m1'], NULL, '1 min')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'NULL ttl', $$SELECT fencing_acquire_all(ARRAY['m1'], 'h', NULL)$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'zero ttl', $$SELECT fencing_acquire_all(ARRAY['m1'], 'h', '0')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'negative wait', $$SELECT fencing_acquire_all(ARRAY['m1'], 'h', '1 min', '-1 s')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'NULL namespace', $$SELECT fencing_acquire_all(ARRAY['m1'], 'h', '1 min', NULL, NULL)$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'unknown namespace', $$SELECT fencing_acquire_all(ARRAY['m1'], 'h', '1 min', NULL, 'no-such-ns')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', '10 MB element', $$SELECT fencing_acquire_all(ARRAY[(SELECT s10mb FROM bi_big)], 'h', '1 min', NULL, 'bi-ns')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'unicode', $$SELECT fencing_acquire_all(ARRAY['ü2', 'ü1'], 'hôlder', '1 min', NULL, 'Mixed NS ü')$$),
('fencing_acquire_all(text[],text,interval,interval,text)', 'wrong type', $$SELECT fencing_acquire_all(ARRAY[1, 2], 'h', '1 min')$$),
('fencing_check(text,fencing_token,text)', 'NULL resource', $$SELECT fencing_check(NULL, 1)$$),
('fencing_check(text,fencing_token,text)', 'NULL token', $$SELECT fencing_check('l1', NULL)$$),
('fencing_check(text,fencing_token,text)', 'NULL namespace', $$SELECT fencing_check('l1', 1, NULL)$$),
('fencing_check(text,fencing_token,text)', 'token -1', $$SELECT fencing_check('l1', -1)$$),
('fencing_check(text,fencing_token,text)', 'token max', $$SELECT fencing_check('l1', 9223372036854775807)$$),
('fencing_check(text,fencing_token,text)', 'token 0', $$SELECT fencing_check('l1', 0)$$),
('fencing_check(text,fencing_token,text)', 'unknown resource', $$SELECT fencing_check('never-leased', 1)$$),
('fencing_check(text,fencing_token,text)', 'unknown namespace', $$SELECT fencing_check('l1', 1, 'no-such-ns')$$),
('fencing_check(text,fencing_token,text)', '10 MB resource', $$SELECT fencing_check((SELECT s10mb FROM bi_big), 1, 'bi-ns')$$),
('fenced_update_result(regclass,fencing_token,jsonb,jsonb)', 'NULL token', $$SELECT fenced_update_result('bi_row', NULL, '{"id": 1}', '{"v": "x"}')$$),
('fenced_update_result(regclass,fencing_token,jsonb,jsonb)', 'NULL key', $$SELECT fenced_update_result('bi_row', 11, NULL, '{"v": "x"}')$$),
('fenced_update_result(regclass,fencing_token,jsonb,jsonb)', 'token 0 (stale)', $$SELECT fenced_update_result('bi_row', 0, '{"id": 1}', '{"v": "x"}')$$),
('fenced_update_result(regclass,fencing_token,jsonb,jsonb)', 'no such row', $$SELECT fenced_update_result('bi_row', 11, '{"id": 999}', '{"v": "x"}')$$),
('fenced_update_result(regclass,fencing_token,jsonb,jsonb)', 'unprotected table', $$SELECT fenced_update_result('bi_plain', 11, '{"id": 1}', '{"v": "x"}')$$),
('fenced_delete_result(regclass,fencing_token,jsonb)', 'NULL target', $$SELECT fenced_delete_result(NULL, 11, '{"id": 1}')$$),
('fenced_delete_result(regclass,fencing_token,jsonb)', 'token 0 (stale)', $$SELECT fenced_delete_result('bi_row', 0, '{"id": 1}')$$),
('fenced_delete_result(regclass,fencing_token,jsonb)', 'empty key', $$SELECT fenced_delete_result('bi_row', 11, '{}')$$),
('fenced_upsert_result(regclass,fencing_token,jsonb)', 'NULL row', $$SELECT fenced_upsert_result('bi_row', 11, NULL)$$),
('fenced_upsert_result(regclass,fencing_token,jsonb)', 'token 0 (stale)', $$SELECT fenced_upsert_result('bi_row', 0, '{"id": 1, "v": "x"}')$$),
('fenced_upsert_result(regclass,fencing_token,jsonb)', 'scalar row', $$SELECT fenced_upsert_result('bi_row', 11, '"v"')$$);

-- Run the catalogue: each case in its own subtransaction.
CREATE TABLE outcome AS
    SELECT n, fn, input, pg_temp.try(sql) AS result FROM catalogue ORDER BY n;
SELECT fn, input, result FROM outcome ORDER BY n;

-- Never XX000, and the server is still here.
SELECT count(*) AS cases, count(*) FILTER (WHERE result LIKE 'XX%') AS internal_errors
  FROM outcome;

-- The binary receive function, through binary COPY: a 4-byte and a 9-byte
-- field where 8 bytes belong.
SELECT current_setting('data_directory') || '/bad_input.bin' AS binfile \gset
CREATE TABLE bi_bytes (b bytea);
CREATE TABLE bi_tok (t fencing_token);
INSERT INTO bi_bytes VALUES ('\x00000001');
COPY bi_bytes TO :'binfile' WITH (FORMAT binary);
COPY bi_tok FROM :'binfile' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE
TRUNCATE bi_bytes;
INSERT INTO bi_bytes VALUES ('\x000000000000000100');
COPY bi_bytes TO :'binfile' WITH (FORMAT binary);
COPY bi_tok FROM :'binfile' WITH (FORMAT binary);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM bi_tok;

-- Every function of the extension has catalogue entries.
SELECT p.oid::regprocedure AS function_without_bad_input_cases
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'fencing'
 WHERE p.oid::regprocedure::text NOT IN (SELECT fn FROM catalogue)
 ORDER BY 1;
-- ... and the catalogue names no function that does not exist.
SELECT DISTINCT fn AS unknown_function FROM catalogue
 WHERE CASE WHEN fn LIKE 'GUC %' THEN false ELSE to_regprocedure(fn) IS NULL END ORDER BY 1;

DROP TABLE outcome, catalogue, bi_big, bi_row, bi_res, bi_tab, bi_plain, bi_nopk, bi_gen,
    bi_drop, bi_gentok, "ünïcødé", "dot.ted""quote", bi_bytes, bi_tok;
DROP MATERIALIZED VIEW bi_mat;
DROP SEQUENCE bi_seq;
DROP SCHEMA "My Schema" CASCADE;
SELECT fencing_resource_reset(r, ns) FROM (VALUES ('r1', 'bi-ns'), ('a-max', 'bi-ns'),
    ('a1', 'bi-ns'), ('ŕésource', 'Mixed NS ü'), ('ressource ü', 'Mixed NS ü'), ('R', 'Mixed NS ü'),
    ('', 'bi-ns'), ('l3', 'bi-ns')) v(r, ns) ORDER BY 1;
SELECT count(fencing_resource_reset(resource, 'bi-ns')) AS long_keys_reset
  FROM fencing.resource_hwm WHERE namespace = 'bi-ns';
-- Leases and namespace claims outlive their resources: remove this file's.
DELETE FROM fencing.lease WHERE namespace IN ('default', 'bi-ns', 'Mixed NS ü')
    AND resource IN ('l1', 'l2', 'l3', '', 'a-max', 'ressource ü');
DELETE FROM fencing.resource_namespace WHERE name IN ('bi-ns', 'Mixed NS ü');
DELETE FROM fencing.reset_log WHERE target LIKE '%bi-ns%' OR target LIKE '%Mixed NS%'
    OR target LIKE 'bi\_%' OR target LIKE '%ünïcødé%';
