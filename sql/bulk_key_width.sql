-- Row scope, bulk loads: a primary key whose columns all have one width
-- (integers, dates, uuid, ...) fits a tombstone once it fitted for one row,
-- so the rows after the first build no key in the guard. The memo goes with
-- the relcache entry: after the key's type changes, a key too long for a
-- tombstone is refused again, in the same session.
SET client_min_messages = warning;
CREATE TABLE kw (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('kw');
INSERT INTO kw SELECT g, 5 FROM generate_series(1, 100) g;
COPY kw FROM STDIN;
101	5
102	5
\.
ALTER TABLE kw ALTER COLUMN id TYPE text;
\set VERBOSITY terse
INSERT INTO kw SELECT repeat('x', 3000) || g, 5 FROM generate_series(1, 2) g;
\set VERBOSITY default
INSERT INTO kw SELECT 'k' || g, 5 FROM generate_series(1, 100) g;
-- A fixed-width key of two columns, and a stale row among fresh ones: the
-- recheck still reads each key's tombstone.
CREATE TABLE kw2 (a int, b uuid, tok fencing_token, PRIMARY KEY (a, b));
SELECT fencing_protect('kw2');
INSERT INTO kw2 VALUES (1, '00000000-0000-0000-0000-000000000001', 5);
BEGIN;
SET LOCAL fencing.token = 8;
DELETE FROM kw2;
COMMIT;
\set VERBOSITY terse
INSERT INTO kw2 SELECT g, '00000000-0000-0000-0000-000000000001', 7 FROM generate_series(0, 3) g;
\set VERBOSITY default
INSERT INTO kw2 SELECT g, '00000000-0000-0000-0000-000000000001', 9 FROM generate_series(0, 3) g;
SELECT count(*) AS kw_rows FROM kw;
SELECT a, tok FROM kw2 ORDER BY a;
DROP TABLE kw, kw2;
