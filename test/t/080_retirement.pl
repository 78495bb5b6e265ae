# kill -9 and retirement.
#
# 1. A retirement acknowledged under synchronous_commit = off survives SIGKILL
#    of the whole server: floors are raised as durably as HWMs (the retiring
#    transaction commits synchronously, whatever the session sets). The WAL
#    writer is slowed down (wal_writer_delay = 10 s), so that an asynchronous
#    commit is not flushed behind the test's back before the kill.
# 2. A retirement in flight at the crash (its batches done, not committed)
#    leaves nothing half done: every entry it deleted is back, its floor raise
#    is gone, and every stale write is refused either way.
# 3. After recovery, retired keys are judged against the recovered floors
#    (resource namespace and row-scope table), and a new lease is issued above
#    the namespace's floor.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

become_subreaper();
my $node = fresh_node('retire', conf => "wal_writer_delay = 10000ms\n");
my $db = 'postgres';

$node->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE jobs (id int PRIMARY KEY, shard text NOT NULL, fence fencing_token);
SELECT fencing_protect('jobs', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'crash-jobs');
INSERT INTO jobs SELECT g, 'r' || g, 100 + g FROM generate_series(1, 300) g;
CREATE TABLE items (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('items');
INSERT INTO items SELECT g, 500 + g FROM generate_series(1, 300) g;
BEGIN; SET LOCAL fencing.token = 900; DELETE FROM items WHERE id <= 200; COMMIT;
SELECT fencing_enable_retirement('crash-jobs');
SELECT fencing_enable_retirement('items'::regclass);
CREATE TABLE plain_log (n int);
CHECKPOINT;
SQL

# --- 1. acknowledged under synchronous_commit = off ---------------------------
my $acked = query($node, $db, q{SET synchronous_commit = off;
SET fencing.retire_batch_size = 50;
SELECT fencing_retire('crash-jobs', '0 s', 200) || ' ' || fencing_retire('items'::regclass, '0 s')});
is($acked, '200 200', 'retirements acknowledged (200 resource HWMs in batches of 50, 200 tombstones)');
# What was acknowledged: the floor is the highest retired HWM.
my $expected = query($node, $db, q{SELECT max(100 + g) || ' ' || min(g) FROM generate_series(1, 300) g
      WHERE 'r' || g NOT IN (SELECT resource FROM fencing.resource_hwm WHERE namespace = 'crash-jobs')});
my ($floor, $retired_id) = split / /, $expected;
my $kept_id = query($node, $db, q{SELECT min(substr(resource, 2)::int) FROM fencing.resource_hwm
      WHERE namespace = 'crash-jobs'});
# An ordinary asynchronous commit after them, for comparison (not asserted:
# whether it reaches the disk before the kill is up to the server).
query($node, $db, q{SET synchronous_commit = off; INSERT INTO plain_log VALUES (1)});
crash_node($node);
is(query($node, $db, 'SELECT 1'), '1', 'server recovered after SIGKILL');
note 'the asynchronous plain commit ' .
  (query($node, $db, 'SELECT count(*) FROM plain_log') eq '0' ? 'was lost, as expected' : 'survived');
is(query($node, $db, q{SELECT floor || ' ' || retired FROM fencing.resource_floor WHERE namespace = 'crash-jobs'}),
	"$floor 200", "the namespace floor raise survived the crash (floor = highest retired HWM, $floor; 200 counted)");
is(query($node, $db, q{SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'crash-jobs'}),
	'100', '... and the 200 retired HWMs stay retired');
is(query($node, $db, q{SELECT floor || ' ' || retired FROM fencing.tombstone_floor WHERE relid = 'items'::regclass}),
	'900 200', 'the table floor raise survived the crash');
is(query($node, $db, q{SELECT count(*) FROM fencing.row_tombstone WHERE relid = 'items'::regclass}),
	'0', '... and the retired tombstones stay retired');

# --- 2. in flight at the crash -------------------------------------------------
my $inflight = $node->background_psql($db, on_error_stop => 0);
$inflight->query_until(qr/retired/, q{
BEGIN;
SELECT fencing_retire('crash-jobs', '0 s') AS n \gset
\echo retired :n
SELECT pg_sleep(60);
});
crash_node($node);
eval { $inflight->quit };
is(query($node, $db, q{SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'crash-jobs'}),
	'100', 'a retirement in flight at the crash: every entry it deleted is back');
is(query($node, $db, q{SELECT floor FROM fencing.resource_floor WHERE namespace = 'crash-jobs'}),
	$floor, '... and its floor raise is gone with it (the committed floor stays)');

# --- 3. judged after recovery ---------------------------------------------------
is(sqlstate($node, $db, "UPDATE jobs SET fence = " . ($floor - 1) . " WHERE id = $retired_id"), 'TF001',
	'a stale write to a retired resource is refused against the recovered floor');
is(sqlstate($node, $db, "UPDATE jobs SET fence = " . (100 + $kept_id - 1) . " WHERE id = $kept_id"), 'TF001',
	'a stale write to a resource with its own HWM is refused against it');
is(sqlstate($node, $db, q{INSERT INTO items VALUES (5, 899)}), 'TF001',
	'a stale re-INSERT of a retired tombstone\'s key is refused against the recovered table floor');
is(sqlstate($node, $db, "INSERT INTO jobs VALUES (1000, 'brand-new', $floor)"), '',
	'a brand-new resource at the floor is admitted (non-strict)');
ok(query($node, $db, "SELECT fencing_acquire('r$retired_id', 'w', '1 min', namespace => 'crash-jobs')") > $floor,
	'a lease on a retired resource is issued above the recovered floor');

$node->stop;
done_testing();
