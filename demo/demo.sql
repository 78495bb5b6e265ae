-- fencing demo: the fencing_token type.
\pset footer off
\set VERBOSITY default
CREATE EXTENSION fencing;

-- A ZooKeeper zxid (epoch 1, counter 34) printed in hex compares above token 34.
SELECT '34'::fencing_token < '0x100000022'::fencing_token AS zxid_is_newer,
       '0x100000022'::fencing_token AS zxid_as_token,
       fencing_token_epoch('0x100000022') AS epoch,
       fencing_token_counter('0x100000022') AS counter;

-- Bad input is refused with PostgreSQL's own SQLSTATEs.
\set ON_ERROR_STOP 0
SELECT '-1'::fencing_token;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT '9223372036854775808'::fencing_token;
\echo SQLSTATE :LAST_ERROR_SQLSTATE
\set ON_ERROR_STOP 1

-- Integer literals work where a token is expected; an index serves ranges.
CREATE TABLE grants (holder text, fence fencing_token);
INSERT INTO grants VALUES ('A', 33), ('B', 34), ('C', '0x100000022');
CREATE INDEX ON grants (fence);
SELECT holder, fence FROM grants WHERE fence >= 34 ORDER BY fence;
SELECT max(fence) AS newest_grant FROM grants;
