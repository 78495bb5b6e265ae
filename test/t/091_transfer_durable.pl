# An acknowledged fencing_transfer_state survives kill -9.
#
# The swap step of a recreate (pg-osc, pgroll) moves the old table's
# tombstones, table HWM and tombstone floor to the new table. Once it is
# acknowledged the client writes the new table: a transfer lost in a crash
# leaves the new table (fenced by auto-protection, or by the policy the
# transfer gave it) without the old state, and a removed key is then accepted
# below its tombstone or floor. So the transfer commits durably, whatever
# synchronous_commit says, as a raise does (found by test/attack35,
# s6_kill9_async.sh: tombstones, floor and table HWM all lost under
# synchronous_commit = off).
#
# The WAL writer sleeps 10 s so that an asynchronous commit stays unflushed
# until the crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

become_subreaper();
my $node = fresh_node('transfer_durable',
	conf => "wal_writer_delay = 10s\nautovacuum = off\ncheckpoint_timeout = 1h\n");
my $db = 'postgres';
$node->safe_psql($db, 'CREATE EXTENSION fencing');

# Row scope: 2000 keys deleted at 50, as tombstones (retirement off) and
# folded into the floor (retirement on); table scope: a table HWM of 50.
$node->safe_psql($db, q{
CREATE TABLE tomb_old (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('tomb_old');
INSERT INTO tomb_old SELECT g, 50 FROM generate_series(1, 3000) g;
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM tomb_old WHERE id <= 2000; COMMIT;
CREATE TABLE tomb_new (id int PRIMARY KEY, tok fencing_token);
INSERT INTO tomb_new SELECT * FROM tomb_old;
CREATE TABLE floor_old (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('floor_old');
SELECT fencing_enable_retirement('floor_old'::regclass);
INSERT INTO floor_old SELECT g, 50 FROM generate_series(1, 3000) g;
BEGIN; SET LOCAL fencing.token = 50; DELETE FROM floor_old WHERE id <= 2000; COMMIT;
CREATE TABLE floor_new (id int PRIMARY KEY, tok fencing_token);
INSERT INTO floor_new SELECT * FROM floor_old;
CREATE TABLE thwm_old (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('thwm_old', scope => 'table');
INSERT INTO thwm_old SELECT g, 50 FROM generate_series(1, 10) g;
CREATE TABLE thwm_new (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_unprotect('thwm_new');
INSERT INTO thwm_new SELECT * FROM thwm_old;
CHECKPOINT;
});

my %moved = (
	tomb => q{SELECT count(*) FROM fencing.row_tombstone WHERE relid = 'tomb_new'::regclass},
	floor => q{SELECT coalesce(max(floor), 0) FROM fencing.tombstone_floor
	           WHERE relid = 'floor_new'::regclass},
	thwm => q{SELECT coalesce(max(hwm), 0) FROM fencing.table_hwm WHERE relid = 'thwm_new'::regclass});
my %expected = (tomb => 2000, floor => 50, thwm => 50);

for my $t ('tomb', 'floor', 'thwm')
{
	query($node, $db,
		"SET synchronous_commit = off; SELECT fencing_transfer_state('${t}_old', '${t}_new')");
	is(query($node, $db, $moved{$t}), $expected{$t}, "$t: the transfer moved the state");
}
crash_node($node);
for my $t ('tomb', 'floor', 'thwm')
{
	is(query($node, $db, $moved{$t}), $expected{$t},
		"$t: the acknowledged transfer (synchronous_commit = off) survived kill -9");
	my ($rc, $out, $err) = $node->psql($db, "INSERT INTO ${t}_new VALUES (100, 40)");
	like($err, qr/stale fencing token/, "$t: a removed key at 40 is refused after the crash");
}

$node->stop;
done_testing();
