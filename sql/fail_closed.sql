-- Fail closed: a table protected from 1.4 on requires a token (TF002 without
-- one) unless it is protected with require_token => false, and
-- fencing_allow_unfenced() admits token-less writes for one transaction.
\set VERBOSITY default
SET client_min_messages = notice;
SELECT current_user AS superuser \gset
CREATE ROLE regress_fc_owner;
CREATE ROLE regress_fc_member IN ROLE regress_fc_owner;
CREATE ROLE regress_fc_other;
CREATE SCHEMA fc AUTHORIZATION regress_fc_owner;
GRANT USAGE ON SCHEMA fc TO regress_fc_member, regress_fc_other;
SET ROLE regress_fc_owner;

-- The default, for a declared and an explicitly protected table; a table
-- opened explicitly.
CREATE TABLE fc.declared (id int PRIMARY KEY, v int, fence fencing_token);
CREATE TABLE fc.explicit (id int PRIMARY KEY, v int, tok bigint);
SELECT fencing_protect('fc.explicit', token_column => 'tok');
CREATE TABLE fc.opened (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('fc.opened', require_token => false);
SELECT table_name, require_token FROM fencing_protected
 WHERE table_name::text LIKE 'fc.%' ORDER BY table_name::text;
GRANT SELECT, INSERT, UPDATE, DELETE ON fc.declared TO regress_fc_other;

INSERT INTO fc.declared VALUES (1, 0);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fc.explicit VALUES (1, 0);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fc.opened VALUES (1, 0);
INSERT INTO fc.declared VALUES (1, 0, 10), (2, 0, 10);
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO fc.explicit VALUES (1, 0); COMMIT;
UPDATE fc.declared SET v = 1 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM fc.declared WHERE id = 2;
\echo :LAST_ERROR_SQLSTATE
UPDATE fc.explicit SET v = 1;
\echo :LAST_ERROR_SQLSTATE
-- The opened table still takes token-less writes, and still fences tokens.
UPDATE fc.opened SET v = 1;
UPDATE fc.opened SET v = 2, fence = 5;
UPDATE fc.opened SET v = 3, fence = 4;
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM fc.opened;

-- fencing_allow_unfenced(): the owner, for the rest of the transaction.
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'backfill of v');
UPDATE fc.declared SET v = 5 WHERE id = 1;
INSERT INTO fc.declared (id, v) VALUES (3, 3);
DELETE FROM fc.declared WHERE id = 2;
COMMIT;
SELECT * FROM fc.declared ORDER BY id;
-- Gone after COMMIT ...
UPDATE fc.declared SET v = 6 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
-- ... after ROLLBACK ...
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'rolled back');
ROLLBACK;
UPDATE fc.declared SET v = 6 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
-- ... and after ROLLBACK TO the savepoint that made the call.
BEGIN;
SAVEPOINT s;
SELECT fencing_allow_unfenced('fc.declared', 'in a savepoint');
UPDATE fc.declared SET v = 7 WHERE id = 1;
ROLLBACK TO SAVEPOINT s;
UPDATE fc.declared SET v = 7 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- A released savepoint's call holds until the transaction ends, also past
-- a later rollback to an inner savepoint.
BEGIN;
SAVEPOINT s;
SELECT fencing_allow_unfenced('fc.declared', 'released savepoint');
RELEASE SAVEPOINT s;
SAVEPOINT t;
ROLLBACK TO SAVEPOINT t;
UPDATE fc.declared SET v = 8 WHERE id = 1;
COMMIT;
SELECT v FROM fc.declared WHERE id = 1;
-- A write that carries a token is still fenced: a stale one is TF001.
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'stale probe');
UPDATE fc.declared SET v = 9, fence = 9 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'stale probe');
SET LOCAL fencing.token = 9;
UPDATE fc.declared SET v = 9 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- Bringing a deleted key back without a token still needs one.
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'reinsert');
INSERT INTO fc.declared (id, v) VALUES (2, 2);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- Autocommit: the call is its own transaction; the next write is refused.
SELECT fencing_allow_unfenced('fc.declared', 'autocommit');
UPDATE fc.declared SET v = 10 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
-- Bad arguments.
SELECT fencing_allow_unfenced('fc.declared', '');
\echo :LAST_ERROR_SQLSTATE
SELECT fencing_allow_unfenced('fc.declared', NULL);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE fc.plain (id int);
SELECT fencing_allow_unfenced('fc.plain', 'not fenced');
\echo :LAST_ERROR_SQLSTATE

-- Privileges: a member of the owning role may; another writer may not; a
-- superuser may.
SET ROLE regress_fc_other;
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'not mine');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
UPDATE fc.declared SET v = 11 WHERE id = 1;
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_fc_member;
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'member of the owner');
UPDATE fc.declared SET v = 12 WHERE id = 1;
COMMIT;
RESET ROLE;
BEGIN;
SELECT fencing_allow_unfenced('fc.declared', 'superuser');
UPDATE fc.declared SET v = 13 WHERE id = 1;
COMMIT;
SELECT v FROM fc.declared WHERE id = 1;

-- Partitions: a call on the protected table covers its partitions; a call
-- on one partition covers that partition only.
SET ROLE regress_fc_owner;
CREATE TABLE fc.parted (id int PRIMARY KEY, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE fc.parted_1 PARTITION OF fc.parted FOR VALUES FROM (0) TO (10);
CREATE TABLE fc.parted_2 PARTITION OF fc.parted FOR VALUES FROM (10) TO (20);
SELECT require_token FROM fencing_protected WHERE table_name = 'fc.parted'::regclass;
BEGIN;
SELECT fencing_allow_unfenced('fc.parted', 'whole table');
INSERT INTO fc.parted (id) VALUES (1), (11);
COMMIT;
BEGIN;
SELECT fencing_allow_unfenced('fc.parted_1', 'one partition');
INSERT INTO fc.parted (id) VALUES (2);
INSERT INTO fc.parted (id) VALUES (12);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT id, fence FROM fc.parted ORDER BY id;
RESET ROLE;
-- The owner of one partition does not own the fenced table's policy: it may
-- not open its partition to unfenced writes.
ALTER TABLE fc.parted_2 OWNER TO regress_fc_other;
GRANT INSERT ON fc.parted TO regress_fc_other;
SET ROLE regress_fc_other;
BEGIN;
SELECT fencing_allow_unfenced('fc.parted_2', 'partition owner');
ROLLBACK;
BEGIN;
INSERT INTO fc.parted_2 (id) VALUES (13);
ROLLBACK;
RESET ROLE;
ALTER TABLE fc.parted_2 OWNER TO regress_fc_owner;

DROP SCHEMA fc CASCADE;
DROP ROLE regress_fc_member, regress_fc_other, regress_fc_owner;
