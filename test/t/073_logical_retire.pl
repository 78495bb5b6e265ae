# Retirement on a logical publisher, then failover to the subscriber: the
# publisher retires tombstones, resource HWMs and an ended lease row into
# floors; the subscriber skips the applied DELETEs and takes the floors. Once
# it is promoted (the subscription disabled, the publisher stopped), every
# retired key's stale write is refused there, a never-written key is judged
# against the floor, and fencing_acquire() issues above every token the
# publisher issued for the resource.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

my $db = 'postgres';
my $pub = fresh_node('pub', allows_streaming => 'logical');
my $sub = fresh_node('sub');

my $schema = <<'SQL';
CREATE EXTENSION fencing;
CREATE TABLE lr_row (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('lr_row');
CREATE TABLE lr_res (id int PRIMARY KEY, shard text, v int, fence fencing_token);
SELECT fencing_protect('lr_res', scope => 'resource', resource_column => 'shard');
SQL
$pub->safe_psql($db, $schema);
$sub->safe_psql($db, $schema);
query($pub, $db, 'CREATE PUBLICATION fpub FOR TABLE lr_row, lr_res');
query($pub, $db, q{SELECT count(*) FROM fencing_publish('fpub')});
my $conn = $pub->connstr . " dbname=$db";
query($sub, $db, "CREATE SUBSCRIPTION fsub CONNECTION '$conn' PUBLICATION fpub");
ok(logical_catch_up($pub, $sub, $db, 'fsub', 60), 'initial sync');

# State on the publisher: key 1 deleted at 20, key 2 deleted at 40, shard s1
# at 30, a lease on L acquired and released, all retired.
$pub->safe_psql($db, <<'SQL');
SELECT fencing_enable_retirement('default'), fencing_enable_retirement('lr_row'::regclass);
INSERT INTO lr_row VALUES (1, 0, 10), (2, 0, 25), (3, 0, 5);
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM lr_row WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 40; DELETE FROM lr_row WHERE id = 2; COMMIT;
INSERT INTO lr_res VALUES (1, 's1', 0, 30);
SQL
query($pub, $db, q{SELECT fencing_resource_advance('L', 12)});
my $lease = query($pub, $db, q{SELECT fencing_acquire('L', 'pub-holder', '1 min')});
query($pub, $db, qq{SELECT fencing_release('L', '$lease')});
my $retired = query($pub, $db,
	q{SELECT fencing_retire('default', '0 s') + fencing_retire('lr_row'::regclass, '0 s')});
ok($retired >= 4, "the publisher retired its entries ($retired)");
my $rfloor = query($pub, $db, q{SELECT floor FROM fencing.resource_floor WHERE namespace = 'default'});
is(query($pub, $db, q{SELECT floor FROM fencing.tombstone_floor WHERE relid = 'lr_row'::regclass}),
	'40', 'the table floor on the publisher is 40');
ok(logical_catch_up($pub, $sub, $db, 'fsub', 60), 'caught up after retirement');
is(query($sub, $db, q{SELECT floor FROM fencing.tombstone_floor WHERE relid = 'lr_row'::regclass}),
	'40', 'the table floor arrived');
is(query($sub, $db, q{SELECT floor FROM fencing.resource_floor WHERE namespace = 'default'}),
	$rfloor, "the namespace floor arrived ($rfloor)");

# Failover: the publisher stops, the subscriber is promoted.
$pub->stop('immediate');
query($sub, $db, 'ALTER SUBSCRIPTION fsub DISABLE');
query($sub, $db, 'ALTER SUBSCRIPTION fsub SET (slot_name = NONE)');
query($sub, $db, 'DROP SUBSCRIPTION fsub');

my @stale = (
	[ 'INSERT INTO lr_row VALUES (1, 1, 15)', 'deleted key 1 re-inserted at 15 (its tombstone 20)' ],
	[ 'INSERT INTO lr_row VALUES (2, 1, 39)', 'deleted key 2 re-inserted at 39 (its tombstone 40)' ],
	[ 'INSERT INTO lr_row VALUES (99, 1, 39)', 'a never-written key at 39 (the floor 40)' ],
	[ 'BEGIN; SET LOCAL fencing.token = 29; INSERT INTO lr_res VALUES (2, $$s1$$, 1); COMMIT',
		'shard s1 at 29 (its HWM 30)' ],
	[ 'BEGIN; SET LOCAL fencing.token = ' . ($lease - 1) . '; INSERT INTO lr_res VALUES (3, $$L$$, 1); COMMIT',
		'resource L below its released lease token' ],
	[ 'BEGIN; SET LOCAL fencing.token = 3; UPDATE lr_row SET v = 9 WHERE id = 3; COMMIT',
		'live row 3 at 3 (its token 5)' ],
);
for my $s (@stale)
{
	is(sqlstate($sub, $db, $s->[0]), 'TF001', "promoted subscriber refuses: $s->[1]");
}
my $next = query($sub, $db, q{SELECT fencing_acquire('L', 'sub-holder', '1 min')});
# The subscriber skipped the applied DELETEs of L's HWM and lease rows, so L
# keeps its own entry there and is judged by it, not by the floor: the next
# token is above every token issued for L (not necessarily above the floor,
# which other resources raised).
ok($next > $lease, "a new lease on L is above the publisher's token $lease ($next)");
my $fresh = query($sub, $db, q{SELECT fencing_acquire('never', 'sub-holder', '1 min')});
ok($fresh > $rfloor, "a lease on a never-used resource is above the floor ($fresh)");
is(sqlstate($sub, $db, 'INSERT INTO lr_row VALUES (1, 1, 41)'), '', 'a current token is accepted');
done_testing();
