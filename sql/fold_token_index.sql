-- A removal that folds into the table's floor (retirement on, more than 1000
-- rows) reads the highest token from a B-tree index on the token column when
-- the table has one, instead of every row. The floor must still be the
-- highest token of the live rows: an index entry of a deleted row, a row
-- without a token, a descending index and a partial index (not used) each
-- tried, and a stale re-insert refused after each.
SET client_min_messages = notice;
\set VERBOSITY terse
-- DROP of a partition with an ascending index; a row without a token (NULL
-- sorts last, first in a backward scan) and the top 100 tokens deleted (their
-- index entries dead, not vacuumed).
CREATE TABLE fti (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE fti_1 PARTITION OF fti FOR VALUES FROM (0) TO (10000);
CREATE TABLE fti_2 PARTITION OF fti FOR VALUES FROM (10000) TO (20000);
INSERT INTO fti VALUES (0);
-- Declaring the column fences the table; the row already there has no token.
ALTER TABLE fti ADD COLUMN tok fencing_token;
CREATE INDEX fti_tok ON fti (tok);
SELECT fencing_enable_retirement('fti'::regclass);
INSERT INTO fti SELECT g, g FROM generate_series(1, 1500) g;
INSERT INTO fti SELECT g, 5 FROM generate_series(10001, 10010) g;
BEGIN;
SET LOCAL fencing.token = 2000;
DELETE FROM fti WHERE id > 1400 AND id <= 1500;
COMMIT;
DROP TABLE fti_1;
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'fti'::regclass;
CREATE TABLE fti_1b PARTITION OF fti FOR VALUES FROM (0) TO (10000);
-- Refused: below the floor (key 700 held 700; keys 1401-1500 were deleted at 2000).
INSERT INTO fti VALUES (700, 1399);
INSERT INTO fti VALUES (1450, 1999);
-- Accepted: above both.
INSERT INTO fti VALUES (700, 1401);
INSERT INTO fti VALUES (1450, 2001);
DROP TABLE fti;
-- TRUNCATE with a descending index (NULLs first).
CREATE TABLE ftd (id int PRIMARY KEY);
INSERT INTO ftd VALUES (0);
ALTER TABLE ftd ADD COLUMN tok fencing_token;
CREATE INDEX ftd_tok ON ftd (tok DESC);
SELECT fencing_enable_retirement('ftd'::regclass);
INSERT INTO ftd SELECT g, 3000 - g FROM generate_series(1, 1200) g;
TRUNCATE ftd;
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'ftd'::regclass;
INSERT INTO ftd VALUES (5, 2998);
INSERT INTO ftd VALUES (5, 3000);
DROP TABLE ftd;
-- A partial index is not used: the highest token is outside its predicate.
CREATE TABLE ftp (id int PRIMARY KEY, tok fencing_token);
CREATE INDEX ftp_tok ON ftp (tok) WHERE id > 100;
SELECT fencing_enable_retirement('ftp'::regclass);
INSERT INTO ftp SELECT g, CASE WHEN g <= 100 THEN 5000 + g ELSE g END
  FROM generate_series(1, 1200) g;
TRUNCATE ftp;
SELECT floor FROM fencing.tombstone_floor WHERE relid = 'ftp'::regclass;
INSERT INTO ftp VALUES (50, 5099);
INSERT INTO ftp VALUES (50, 5101);
DROP TABLE ftp;
