# Logical replication of a fenced database: a publisher and a subscriber
# with the same schema (row, resource and table scope, leases), the user
# tables and the extension's state tables in one publication (fencing_publish)
# and one text-mode subscription. While subscribed: a raise made on the
# subscriber itself is not lowered by a later, lower applied HWM; an applied
# INSERT of a key the subscriber already has (initial sync and streaming)
# does not stall the subscription; a reset on the publisher does not lower the
# subscriber; binary = true is reported by fencing_check_subscription(). Then
# a stress: writers in every scope and lease loops on the publisher, a
# catch-up wait at a random moment, the subscription dropped and the
# publisher stopped ("promotion"). On the promoted subscriber every stale
# write is refused (deleted key re-inserted, resource, table, row) and
# fencing_acquire() returns a token above every token the publisher issued,
# for the known writes and for every write acknowledged before the catch-up
# point.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Copy ();
use Time::HiRes qw(time sleep);
use FencingTest;

my $started = time;
my $db = 'postgres';
my $pub = fresh_node('pub', allows_streaming => 'logical', conf => "max_connections = 60\n");
my $sub = fresh_node('sub', conf => "max_connections = 60\n");

my $schema = <<'SQL' . workload_setup('s');
CREATE EXTENSION fencing;
CREATE TABLE lr_row (id int PRIMARY KEY, v int, fence fencing_token);
CREATE TABLE lr_res (id int PRIMARY KEY, shard text, v int, fence fencing_token);
SELECT fencing_protect('lr_res', scope => 'resource', resource_column => 'shard');
CREATE TABLE lr_tab (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('lr_tab', scope => 'table');
SQL
# Other OIDs on the subscriber: relids must map by name, not by OID.
query($sub, $db, 'CREATE TABLE oid_shift AS SELECT g FROM generate_series(1, 10) g; CREATE TABLE oid_shift2 (a int)');
$pub->safe_psql($db, $schema);
$sub->safe_psql($db, $schema);
# The user tables start empty on the subscriber: the initial sync copies rows.
query($sub, $db, 'BEGIN; SET LOCAL fencing.token = 0; DELETE FROM s_row_off; DELETE FROM s_row_on; COMMIT');
isnt(query($pub, $db, q{SELECT 'lr_row'::regclass::oid}), query($sub, $db, q{SELECT 'lr_row'::regclass::oid}),
	'the user tables have other OIDs on the subscriber');

my $user_tables = query($pub, $db,
	q{SELECT string_agg(relid::text, ', ') FROM fencing.protected});
query($pub, $db, "CREATE PUBLICATION fpub FOR TABLE $user_tables");
my $have_publish = query($pub, $db, q{SELECT to_regprocedure('fencing_publish(name)') IS NOT NULL}) eq 't';
if ($have_publish)
{
	is(query($pub, $db, q{SELECT string_agg(t::text, ',' ORDER BY t::text) FROM fencing_publish('fpub') t}),
		'fencing.lease,fencing.resource_floor,fencing.resource_hwm,fencing.row_tombstone,fencing.table_hwm,fencing.tombstone_floor',
		'fencing_publish adds the state tables');
	is(query($pub, $db, q{SELECT count(*) FROM fencing_publish('fpub')}), '6', 'fencing_publish again: nothing to add');
	query($pub, $db, 'CREATE PUBLICATION fall FOR ALL TABLES');
	is(sqlstate($pub, $db, q{SELECT fencing_publish('fall')}), '55000',
		'a FOR ALL TABLES publication (fencing.protected with it) is refused');
	query($pub, $db, 'DROP PUBLICATION fall');
}
else
{
	# Before fencing_publish(): the state tables published by hand.
	fail('fencing_publish exists');
	query($pub, $db,
		'ALTER PUBLICATION fpub ADD TABLE fencing.resource_hwm, fencing.table_hwm, fencing.row_tombstone, fencing.lease');
}

# Known state on the publisher before the subscription.
$pub->safe_psql($db, <<'SQL');
INSERT INTO lr_row VALUES (1, 0, 10), (2, 0, 10);
INSERT INTO lr_res VALUES (1, 's1', 0, 10), (3, 's1', 0, 10), (4, 's2', 0, 20);
INSERT INTO lr_tab VALUES (1, 0, 10), (2, 0, 10);
SQL
# Subscriber-local raises made before subscribing: one above the publisher's
# (s2: 500 over 20), one below (lr_tab: 5 under 10). The initial sync applies
# INSERTs of keys the subscriber already has.
query($sub, $db, q{SELECT fencing_resource_advance('s2', 500), fencing_advance('lr_tab', 5)});

my $pubconn = $pub->connstr($db);
query($sub, $db, 'CREATE SUBSCRIPTION fsub CONNECTION $c$' . $pubconn . '$c$ PUBLICATION fpub');

sub catch_up { logical_catch_up($pub, $sub, $db, 'fsub', $_[0]) }
ok(catch_up(60), 'initial sync with keys the subscriber already has does not stall');
is(query($sub, $db, q{SELECT fencing_resource_high_water('s2') || '/' || fencing_high_water('lr_tab')}), '500/10',
	'initial sync keeps the greater HWM of each key (s2: local 500 over 20; lr_tab: 10 over local 5)');
is(query($sub, $db, q{SELECT count(*) FROM fencing_check_subscription()}), '0',
	'fencing_check_subscription: nothing to report')
  if $have_publish;

# The attack's writes on the publisher: row 50, tombstone 60, resource 70,
# table 80, two leases.
$pub->safe_psql($db, <<'SQL');
BEGIN; SET LOCAL fencing.token = 50; UPDATE lr_row SET v = 1 WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 60; DELETE FROM lr_row WHERE id = 2; COMMIT;
BEGIN; SET LOCAL fencing.token = 70; UPDATE lr_res SET v = 1 WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 80; UPDATE lr_tab SET v = 1 WHERE id = 1; COMMIT;
SQL
my $t1 = query($pub, $db, q{SELECT fencing_acquire('job-1', 'worker-A', '1 hour')});
query($pub, $db, "SELECT fencing_release('job-1', $t1)");
my $t2 = query($pub, $db, q{SELECT fencing_acquire('job-1', 'worker-A2', '1 hour')});
ok(catch_up(30), 'subscriber caught up with the fenced writes');
is(query($sub, $db, q{SELECT fencing_high_water('lr_row', '{"id": 2}') || '/' || fencing_resource_high_water('s1')
	|| '/' || fencing_high_water('lr_tab')}), '60/70/80', 'tombstone, resource and table HWMs arrived');

# Raises on the subscriber itself, then lower ones applied from the publisher
# (an UPDATE of the HWM row: 85 < 90, 72 < 75), an applied INSERT of a key the
# subscriber already has (s7: local 30, publisher 40), and a reset on the publisher (a DELETE).
query($sub, $db,
	q{SELECT fencing_advance('lr_tab', 90), fencing_resource_advance('s1', 75), fencing_resource_advance('s7', 30)});
# A lease is not issued on the subscriber while fencing.lease is subscribed:
# the publisher issues job-2's tokens to its own holders.
is(sqlstate($sub, $db, q{SELECT fencing_acquire('job-2', 'sub-local', '1 s')}), '55000',
	'fencing_acquire on the subscriber is refused while subscribed');
$pub->safe_psql($db, <<'SQL');
BEGIN; SET LOCAL fencing.token = 85; UPDATE lr_tab SET v = 2 WHERE id = 1; COMMIT;
BEGIN; SET LOCAL fencing.token = 72; UPDATE lr_res SET v = 2 WHERE id = 1; COMMIT;
INSERT INTO lr_res VALUES (7, 's7', 0, 40);
SELECT fencing_release('job-2', fencing_acquire('job-2', 'pub-1', '1 hour'));
SELECT fencing_acquire('job-2', 'pub-2', '1 hour');
SELECT fencing_reset('lr_row', '{"id": 2}');
SQL
query($pub, $db, "SELECT fencing_release('job-1', $t2)");
my $pub_job2 = query($pub, $db, q{SELECT token FROM fencing.lease WHERE resource = 'job-2'});
ok(catch_up(30), 'an applied INSERT of a key the subscriber already has does not stall the subscription');
is(query($sub, $db, q{SELECT fencing_high_water('lr_tab')}), '90', 'a local table raise is not lowered by apply (90, not 85)');
is(query($sub, $db, q{SELECT fencing_resource_high_water('s1')}), '75', 'a local resource raise is not lowered by apply (75, not 72)');
is(query($sub, $db, q{SELECT fencing_resource_high_water('s7')}), '40', 'an applied INSERT of an existing key keeps the greater (40 over 30)');
is(query($sub, $db, q{SELECT token FROM fencing.lease WHERE resource = 'job-2'}), $pub_job2,
	"the lease row carries the publisher's token ($pub_job2)");
is(query($sub, $db, q{SELECT fencing_high_water('lr_row', '{"id": 2}')}), '60',
	"a reset on the publisher does not lower the subscriber's tombstone");
is(query($sub, $db, q{SELECT v FROM lr_tab WHERE id = 1}), '2', 'the user rows arrived (apply is not fenced by the subscriber)');
is(sqlstate($sub, $db, q{BEGIN; SET LOCAL fencing.token = 91; UPDATE lr_tab SET v = -1 WHERE id = 2; COMMIT;}), '55000',
	'a local write to a subscribed table is refused while the subscription is enabled');

if ($have_publish)
{
	query($sub, $db, 'ALTER SUBSCRIPTION fsub SET (binary = true)');
	like(query($sub, $db, q{SELECT string_agg(problem, '; ') FROM fencing_check_subscription()}), qr/binary = true/,
		'fencing_check_subscription reports binary = true');
	query($sub, $db, 'ALTER SUBSCRIPTION fsub SET (binary = false)');
}
else
{
	fail('fencing_check_subscription exists');
}

# The stress: writers in every scope and lease loops on the publisher; at a
# random moment the acknowledged tokens are taken, the subscriber catches up
# to that point, and the subscription is dropped while the writers run on.
my $acks = PostgreSQL::Test::Utils::tempdir('acks');
my $snap = PostgreSQL::Test::Utils::tempdir('acks_at_catchup');
my @pids = start_workload($pubconn, $acks, 's', 'lease-logical');
sleep 1 + rand 3;
File::Copy::copy($_, $snap) for glob "$acks/*";
my $caught = catch_up(120);
query($sub, $db, 'DROP SUBSCRIPTION fsub');
sleep 0.5;
$pub->stop('immediate');
waitpid($_, 0) for @pids;
ok($caught, 'subscriber caught up mid-stress');

# Promoted: the application writes to the subscriber now.
is(sqlstate($sub, $db, q{BEGIN; SET LOCAL fencing.token = 59; INSERT INTO lr_row VALUES (2, -1, 59); COMMIT;}),
	'TF001', 'stale re-insert of a key deleted on the publisher refused (59 < 60)');
is(sqlstate($sub, $db, q{BEGIN; SET LOCAL fencing.token = 49; UPDATE lr_row SET v = -1 WHERE id = 1; COMMIT;}),
	'TF001', 'stale row write refused (49 < 50)');
is(sqlstate($sub, $db, q{BEGIN; SET LOCAL fencing.token = 74; UPDATE lr_res SET v = -1 WHERE id = 3; COMMIT;}),
	'TF001', 'stale resource write refused (74 < 75)');
is(sqlstate($sub, $db, q{BEGIN; SET LOCAL fencing.token = 89; UPDATE lr_tab SET v = -1 WHERE id = 2; COMMIT;}),
	'TF001', 'stale table write refused (89 < 90)');
my $sub_t = query($sub, $db, q{SELECT fencing_acquire('job-1', 'worker-B', '1 hour', wait => '10 s')});
ok($sub_t > $t2 && $sub_t > $t1, "fencing_acquire on the promoted subscriber: $sub_t, above the publisher's $t1 and $t2");
is(query($sub, $db, q{SELECT fenced_update('lr_tab', 91, '{"id": 2}', '{"v": 3}')}), '1', 'a fresh token is admitted');

my $r = check_workload($sub, $db, $snap, 's', 'lease-logical');
is(join('; ', @{ $r->{bad} }), '',
	scalar(@WRITERS) . " writers ($r->{acked} raising commits acknowledged before the catch-up point): "
	  . 'on the promoted subscriber every HWM >= last acknowledged, (last - 1) refused');
my ($tokens, $first, $max) = @$r{qw(tokens first max)};
my %seen;
my $dups = grep { $seen{$_}++ } @$tokens, $first;
ok(@$tokens && $first > $max,
	scalar(@$tokens) . " lease tokens acknowledged before the catch-up point; the subscriber's first token ($first) is above them all ($max)");
is($dups, 0, 'no lease token issued twice across the promotion');
note sprintf('logical promotion under load: %d acknowledged raising commits before the catch-up point, %d HWM regressions, %d lease tokens; %.0f s',
	$r->{acked}, $r->{lost}, scalar(@$tokens), time - $started);

$sub->stop;
done_testing();
