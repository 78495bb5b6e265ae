# kill -9 and removals that fold into a table's floor (or write set-based
# tombstones): acknowledged under synchronous_commit = off, they survive
# SIGKILL of the whole server (the removing transaction commits durably, as
# an HWM raise does; the WAL writer is slowed down so an asynchronous commit
# is not flushed behind the test's back). A fold in flight at the crash
# leaves nothing: the rows are back, the floor as it was.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

become_subreaper();
my $node = fresh_node('fold', conf => "wal_writer_delay = 10000ms\n");
my $db = 'postgres';

$node->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE f (id int PRIMARY KEY, fence fencing_token);
INSERT INTO f SELECT g, 10 FROM generate_series(1, 3000) g;
SELECT fencing_protect('f');
SELECT fencing_enable_retirement('f'::regclass);
CREATE TABLE x (id int PRIMARY KEY, fence fencing_token);
INSERT INTO x SELECT g, 10 FROM generate_series(1, 3000) g;
SELECT fencing_protect('x');
CREATE TABLE t (id int PRIMARY KEY, fence fencing_token);
INSERT INTO t SELECT g, 10 FROM generate_series(1, 3000) g;
SELECT fencing_protect('t');
SELECT fencing_enable_retirement('t'::regclass);
CREATE TABLE p (id int PRIMARY KEY, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE p_1 PARTITION OF p FOR VALUES FROM (1) TO (3001);
CREATE TABLE p_d PARTITION OF p DEFAULT;
INSERT INTO p SELECT g, 10 FROM generate_series(1, 3000) g;
SELECT fencing_protect('p');
SELECT fencing_enable_retirement('p'::regclass);
CHECKPOINT;
SQL

# --- acknowledged under synchronous_commit = off ------------------------------
# TRUNCATE and DROP commit synchronously anyway (they drop files), and so
# flush what committed before them: the DELETEs come last, the fold last of
# all.
query($node, $db, q{SET synchronous_commit = off;
BEGIN; SET LOCAL fencing.token = 42; UPDATE t SET fence = 42 WHERE id = 7; COMMIT;
TRUNCATE t;
BEGIN; SET LOCAL fencing.token = 43; UPDATE p SET fence = 43 WHERE id = 9; COMMIT;
DROP TABLE p_1;
BEGIN; SET LOCAL fencing.token = 41; DELETE FROM x WHERE id <= 2000; COMMIT;
BEGIN; SET LOCAL fencing.token = 40; DELETE FROM f WHERE id <= 2000; COMMIT;});
crash_node($node);
is(query($node, $db, 'SELECT 1'), '1', 'server recovered after SIGKILL');
is(query($node, $db, q{SELECT floor FROM fencing.tombstone_floor WHERE relid = 'f'::regclass}),
	'40', 'a folded DELETE acknowledged under synchronous_commit = off: its floor raise survived');
is(query($node, $db, q{SELECT count(*) || ' ' || min(hwm) FROM fencing.row_tombstone WHERE relid = 'x'::regclass}),
	'2000 41', 'a DELETE without retirement: its set-based tombstones survived');
is(query($node, $db, q{SELECT floor FROM fencing.tombstone_floor WHERE relid = 't'::regclass}),
	'42', 'a folded TRUNCATE survived');
is(query($node, $db, q{SELECT floor FROM fencing.tombstone_floor WHERE relid = 'p'::regclass}),
	'43', 'a folded DROP of a partition survived');
is(sqlstate($node, $db, q{INSERT INTO f VALUES (5, 39)}), 'TF001', 'stale re-insert refused after recovery (DELETE fold)');
is(sqlstate($node, $db, q{INSERT INTO x VALUES (5, 40)}), 'TF001', '... (set-based tombstone)');
is(sqlstate($node, $db, q{INSERT INTO t VALUES (7, 41)}), 'TF001', '... (TRUNCATE fold)');
is(sqlstate($node, $db, q{INSERT INTO p VALUES (9, 42)}), 'TF001', '... (DROP fold)');
is(sqlstate($node, $db, q{INSERT INTO f VALUES (5, 40)}), '', 'a token at the floor is admitted');

# --- in flight at the crash ---------------------------------------------------
my $inflight = $node->background_psql($db, on_error_stop => 0);
$inflight->query_until(qr/deleted/, q{
BEGIN;
SET LOCAL fencing.token = 90;
DELETE FROM f;
\echo deleted
SELECT pg_sleep(60);
});
crash_node($node);
eval { $inflight->quit };
is(query($node, $db, q{SELECT count(*) FROM f}), '1001', 'a fold in flight at the crash: its rows are back');
is(query($node, $db, q{SELECT floor FROM fencing.tombstone_floor WHERE relid = 'f'::regclass}),
	'40', '... and its floor raise is gone');
is(query($node, $db, q{SELECT count(*) FROM fencing.row_tombstone WHERE relid = 'f'::regclass}),
	'0', '... and it left no tombstone');

$node->stop;
done_testing();
