-- The fencing_token type: input forms, errors with their SQLSTATEs, bounds,
-- operators, casts, indexes and binary I/O.

-- Input: decimal, hex (ZooKeeper zxid style), surrounding whitespace.
SELECT '34'::fencing_token < '0x100000022'::fencing_token AS zxid_is_larger;
SELECT '0'::fencing_token, '9223372036854775807'::fencing_token,
       '0x100000022'::fencing_token, '0XfF'::fencing_token,
       '0x7FFFFFFFFFFFFFFF'::fencing_token, E' \t 42 \n'::fencing_token, '007'::fencing_token;

-- Errors: syntax is 22P02, range is 22003.
\set VERBOSITY default
SELECT ''::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '   '::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '-1'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '+1'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT 'abc'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '12abc'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '1 2'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '0x'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '0xg1'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '1.5'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '9223372036854775808'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '0x8000000000000000'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '99999999999999999999999999'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '99999999999999999999999999x'::fencing_token;
\echo :LAST_ERROR_SQLSTATE

-- Output is decimal.
SELECT '0x10'::fencing_token::text AS sixteen;

-- Operators, with integer literals and bigint values where a token is expected.
SELECT a, b, a = b AS eq, a <> b AS ne, a < b AS lt, a <= b AS le, a > b AS gt, a >= b AS ge
FROM (VALUES ('33'::fencing_token, '34'::fencing_token),
             ('34', '34'), ('35', '34')) v(a, b);
SELECT '34'::fencing_token = 34 AS int4_literal, '34'::fencing_token < 35::bigint AS int8_value,
       34 = '34'::fencing_token AS commuted;

-- Casts: integers in (negative is out of range), bigint out explicitly.
SELECT 34::fencing_token, 9223372036854775807::bigint::fencing_token;
SELECT (-1)::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT (-1)::bigint::fencing_token;
\echo :LAST_ERROR_SQLSTATE
SELECT '0x100000022'::fencing_token::bigint + 1 AS as_bigint;
-- No arithmetic on tokens: they are opaque.
SELECT '1'::fencing_token + '1'::fencing_token;
\echo :LAST_ERROR_SQLSTATE
-- Not implicitly a bigint either.
SELECT abs('1'::fencing_token);
\echo :LAST_ERROR_SQLSTATE

-- ZooKeeper zxid helpers.
SELECT fencing_token_epoch('0x100000022'), fencing_token_counter('0x100000022'),
       fencing_token_from_zxid(1, 34), fencing_token_from_zxid(2147483647, 4294967295);
SELECT fencing_token_from_zxid(2147483648, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_token_from_zxid(0, -1);
\echo :LAST_ERROR_SQLSTATE

-- Tables, function arguments, ORDER BY / DISTINCT / GROUP BY, min/max.
CREATE TABLE tok (id int PRIMARY KEY, fence fencing_token NOT NULL);
INSERT INTO tok VALUES (1, 34), (2, '0x100000022'), (3, 33), (4, 34), (5, 9223372036854775807);
CREATE FUNCTION echo_token(t fencing_token) RETURNS fencing_token LANGUAGE sql AS 'SELECT t';
SELECT echo_token(34), echo_token(34::bigint), echo_token('0x22');
SELECT fence FROM tok ORDER BY fence DESC;
SELECT DISTINCT fence FROM tok ORDER BY 1;
SELECT fence, count(*) FROM tok GROUP BY fence ORDER BY fence;
SELECT min(fence), max(fence) FROM tok;
SELECT id FROM tok WHERE fence < 35 ORDER BY id;
SELECT id FROM tok WHERE fence BETWEEN 34 AND '0x100000022' ORDER BY id;

-- Joins: hash and merge.
CREATE TABLE tok2 (fence fencing_token);
INSERT INTO tok2 VALUES (34), (33), (1);
SET enable_nestloop = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT tok.id FROM tok JOIN tok2 USING (fence);
SELECT tok.id FROM tok JOIN tok2 USING (fence) ORDER BY 1;
SET enable_hashjoin = off;
SET enable_mergejoin = on;
EXPLAIN (COSTS OFF) SELECT tok.id FROM tok JOIN tok2 USING (fence);
SELECT tok.id FROM tok JOIN tok2 USING (fence) ORDER BY 1;
RESET enable_nestloop;
RESET enable_mergejoin;
RESET enable_hashjoin;

-- Hash aggregation and a hash index.
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT fence, count(*) FROM tok GROUP BY fence;
RESET enable_sort;
CREATE INDEX tok_fence_hash ON tok USING hash (fence);
DROP INDEX tok_fence_hash;

-- A btree index is used for equality and range predicates.
CREATE TABLE big (id int, fence fencing_token);
INSERT INTO big SELECT g, g FROM generate_series(1, 10000) g;
CREATE INDEX big_fence ON big (fence);
ANALYZE big;
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE fence = 34;
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE fence < 10;
EXPLAIN (COSTS OFF) SELECT id FROM big WHERE fence BETWEEN '0x10' AND 20;
SELECT id FROM big WHERE fence BETWEEN '0x10' AND 20 ORDER BY id;
-- max() and min() read the end of the index.
EXPLAIN (COSTS OFF) SELECT max(fence) FROM big;
SELECT max(fence), min(fence) FROM big;

-- Binary I/O: send/recv and binary COPY round-trip.
SELECT fencing_token_send('0x100000022');
-- The files live in the scratch cluster's data directory (server-side COPY).
SELECT current_setting('data_directory') || '/fencing_token.bin' AS tokfile,
       current_setting('data_directory') || '/fencing_token_bad.bin' AS badfile \gset
COPY tok TO :'tokfile' WITH (FORMAT binary);
CREATE TABLE tok_copy (LIKE tok);
COPY tok_copy FROM :'tokfile' WITH (FORMAT binary);
SELECT count(*) AS copied, bool_and(t.fence = c.fence) AS identical
FROM tok t JOIN tok_copy c USING (id);
-- recv validates like input: a negative 8-byte value is rejected.
CREATE TABLE bad_bin (fence bigint);
INSERT INTO bad_bin VALUES (-5);
COPY bad_bin TO :'badfile' WITH (FORMAT binary);
CREATE TABLE bad_tok (fence fencing_token);
\set VERBOSITY terse
COPY bad_tok FROM :'badfile' WITH (FORMAT binary);
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM bad_tok;

DROP TABLE tok, tok2, big, tok_copy, bad_bin, bad_tok;
DROP FUNCTION echo_token;
