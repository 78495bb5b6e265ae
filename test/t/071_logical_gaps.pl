# Logical replication of a fenced database: what a subscriber must not lose
# beyond the promotion of 070_logical.pl, and what fencing_check_subscription()
# must report.
#  * While an enabled subscription replicates a protected table, local
#    writes to it are refused (55000) in every scope and on every write path:
#    apply would overwrite them with the publisher's writes (row scope: an
#    UPDATE at a lower token than the local one, a re-INSERT of a key deleted
#    locally at a higher token). After ALTER SUBSCRIPTION ... DISABLE they are
#    fenced by the state replicated so far; enabled again, refused again.
#    A partitioned table published through its root is replicated too.
#  * A namespace claimed at run time on the publisher is unclaimed on the
#    subscriber: another role must not take it and reset its HWMs.
#  * Resets on the subscriber are refused while it subscribes: apply's
#    UPDATE of a raise on the publisher would find no row to update.
#  * fencing_publish() on a publication with a row filter or a column list
#    on a state table.
#  * copy_data = false: the publisher's state rows never arrive, and each
#    later raise is an UPDATE of a row the subscriber does not have.
#  * A replica-mode session (session_replication_role = replica, as apply and
#    restores run) whose fencing_resource_advance() writes a resource's first
#    HWM: its commit must be durable (flushed) under synchronous_commit = off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use FencingTest;

my $db = 'postgres';
my $pub = fresh_node('pub', allows_streaming => 'logical');
my $sub = fresh_node('sub');

my $schema = <<'SQL';
CREATE EXTENSION fencing;
CREATE TABLE g_row (id int PRIMARY KEY, v int, fence fencing_token);
CREATE TABLE g_res (id int PRIMARY KEY, shard text, v int, fence fencing_token);
SELECT fencing_protect('g_res', scope => 'resource', resource_column => 'shard');
CREATE TABLE g_part (id int PRIMARY KEY, v int, fence fencing_token) PARTITION BY RANGE (id);
CREATE TABLE g_part_1 PARTITION OF g_part FOR VALUES FROM (0) TO (100);
SQL
$pub->safe_psql($db, $schema);
$sub->safe_psql($db, $schema);
query($pub, $db, 'CREATE PUBLICATION gpub FOR TABLE g_row, g_res, g_part WITH (publish_via_partition_root = true)');
query($pub, $db, q{SELECT count(*) FROM fencing_publish('gpub')});
# A state table with a row filter or a column list does not carry the state.
query($pub, $db, 'CREATE PUBLICATION gfilter FOR TABLE g_row, fencing.resource_hwm WHERE (hwm < 50)');
is(sqlstate($pub, $db, q{SELECT fencing_publish('gfilter')}), '55000',
	'fencing_publish() refuses a state table published with a row filter');
query($pub, $db, 'ALTER PUBLICATION gfilter SET TABLE g_row, fencing.lease (namespace, resource, token)');
is(sqlstate($pub, $db, q{SELECT fencing_publish('gfilter')}), '55000',
	'fencing_publish() refuses a state table published with a column list');
query($pub, $db, 'DROP PUBLICATION gfilter');
query($pub, $db,
	q{INSERT INTO g_row VALUES (1, 0, 10), (2, 0, 10); INSERT INTO g_res VALUES (1, 's1', 0, 10); INSERT INTO g_part VALUES (1, 0, 10)});
my $pubconn = $pub->connstr($db);
query($sub, $db, 'CREATE SUBSCRIPTION gsub CONNECTION $c$' . $pubconn . '$c$ PUBLICATION gpub');

sub catch_up { logical_catch_up($pub, $sub, $db, $_[0], 60) }
ok(catch_up('gsub'), 'initial sync');
is(query($sub, $db, 'SELECT count(*) FROM fencing_check_subscription()'), '0', 'nothing reported after a full sync');

# While subscribed, the subscriber's local writes are refused: a raise of
# row 1 to 50 and a delete of row 2 at 50 would be overwritten by the
# publisher's later writes at 20 (fenced there against its own HWMs of 10),
# after which 30 would be admitted here. Every scope and write path.
my %local = (
	'UPDATE of row 1 at 50' => 'BEGIN; SET LOCAL fencing.token = 50; UPDATE g_row SET v = 1 WHERE id = 1; COMMIT',
	'DELETE of row 2 at 50' => 'BEGIN; SET LOCAL fencing.token = 50; DELETE FROM g_row WHERE id = 2; COMMIT',
	'INSERT with the token column' => 'INSERT INTO g_row VALUES (3, 0, 50)',
	'fenced_update()' => q{SELECT fenced_update('g_row', 50, '{"id": 1}', '{"v": 1}')},
	'TRUNCATE' => 'TRUNCATE g_row',
	'write in resource scope' => 'BEGIN; SET LOCAL fencing.token = 50; UPDATE g_res SET v = 1 WHERE id = 1; COMMIT',
	'write to a partition of a table published via its root' =>
	  'BEGIN; SET LOCAL fencing.token = 50; UPDATE g_part SET v = 1 WHERE id = 1; COMMIT',);
for my $what (sort keys %local)
{
	is(sqlstate($sub, $db, $local{$what}), '55000', "while subscribed, a local $what is refused");
}
my ($stdout, $stderr);
$sub->psql($db, 'BEGIN; SET LOCAL fencing.token = 50; UPDATE g_row SET v = 1 WHERE id = 1; COMMIT',
	stdout => \$stdout, stderr => \$stderr);
like($stderr, qr/table .*g_row.* is replicated into this database by subscription "gsub"/, 'the error names the subscription');
is(query($sub, $db,
		q{SELECT string_agg(id || ':' || fence, ',' ORDER BY id) || '/' || (SELECT count(*) FROM fencing.row_tombstone) FROM g_row}),
	'1:10,2:10/0', 'nothing was written by the refused writes');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 20; UPDATE g_row SET v = 2 WHERE id = 1; COMMIT');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 15; DELETE FROM g_row WHERE id = 2; COMMIT');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 20; INSERT INTO g_row VALUES (2, 2); COMMIT');
ok(catch_up('gsub'), 'row-scope writes applied');

# A namespace claimed on the publisher at run time (its first
# fencing_resource_advance or fencing_acquire, no DDL) is unclaimed on the
# subscriber, while its HWMs arrive there: another role must not claim it
# and reset them.
for my $node ($pub, $sub)
{
	query($node, $db, 'CREATE ROLE alice; CREATE ROLE mallory');
}
query($pub, $db, q{SET ROLE alice; SELECT fencing_resource_advance('r1', 50, 'ns_alice')});
ok(catch_up('gsub'), 'the namespace HWM applied');
is(query($sub, $db, q{SELECT fencing_resource_high_water('r1', 'ns_alice')}), '50', 'the HWM arrived');
my @states = sqlstates($sub, $db, 'SET ROLE mallory',
	q{SELECT fencing_resource_advance('other', 1, 'ns_alice')},
	q{SELECT fencing_resource_reset('r1', 'ns_alice')});
is("$states[1] $states[2]", '42501 42501',
	'another role cannot claim the replicated namespace on the subscriber, nor reset its HWMs');
is(query($sub, $db, q{SELECT coalesce(fencing_resource_high_water('r1', 'ns_alice'), 0)}), '50',
	"the replicated HWM is still there");

# Resets on the subscriber are refused while it subscribes: the publisher's
# next raise would be an UPDATE of a row the subscriber no longer has.
is(sqlstate($sub, $db, q{SELECT fencing_resource_reset('s1')}), '55000', 'fencing_resource_reset() refused while subscribed');
is(sqlstate($sub, $db, q{SELECT fencing_reset('g_res', '{"shard": "s1"}')}), '55000',
	'fencing_reset() of a resource refused while subscribed');
is(sqlstate($sub, $db, q{SELECT fencing_reset('g_row', '{"id": 2}')}), '55000',
	'fencing_reset() of a tombstone refused while subscribed');
# So is retirement: it deletes the same rows.
for my $retire (q{SELECT fencing_retire('default', '0 s')}, q{SELECT fencing_retire('g_row'::regclass, '0 s')})
{
	my ($out, $err) = ('', '');
	$sub->psql($db, $retire, stdout => \$out, stderr => \$err);
	like($err, qr/cannot retire .* is replicated into this database by subscription "gsub"/,
		"$retire refused while subscribed");
}
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 100; UPDATE g_res SET v = 1 WHERE id = 1; COMMIT');
ok(catch_up('gsub'), 'the raise after the refused reset applied');
is(query($sub, $db, q{SELECT fencing_resource_high_water('s1')}), '100', "the publisher's raise to 100 arrived");

# Disabled, the subscriber writes locally, fenced by the state replicated so
# far: row 1 at 20 (applied UPDATE), key 2 re-inserted at 20 over its
# tombstone of 15, s1 at 100.
query($sub, $db, 'ALTER SUBSCRIPTION gsub DISABLE');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 19; UPDATE g_row SET v = 3 WHERE id = 1; COMMIT'),
	'TF001', 'disabled: row 1 refuses 19 below the applied 20');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 19; DELETE FROM g_row WHERE id = 2; COMMIT'),
	'TF001', 'disabled: row 2 refuses 19 below its applied re-INSERT at 20');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 50; UPDATE g_res SET v = 2 WHERE id = 1; COMMIT'),
	'TF001', 'disabled: resource s1 refuses 50 below the applied 100');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 30; UPDATE g_row SET v = 3 WHERE id = 1; COMMIT'),
	'', 'disabled: a current token is admitted');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 9; UPDATE g_part SET v = 3 WHERE id = 1; COMMIT'),
	'TF001', 'disabled: the partition refuses 9 below its replicated 10');
is(sqlstate($sub, $db, q{SELECT fencing_reset('g_row', '{"id": 2}')}), '', 'disabled: a reset is allowed');
query($sub, $db, 'ALTER SUBSCRIPTION gsub ENABLE');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 40; UPDATE g_row SET v = 4 WHERE id = 1; COMMIT'),
	'55000', 'enabled again: refused again');

# copy_data = false: a second database subscribes without the initial copy.
query($sub, $db, 'CREATE DATABASE nocopy');
$sub->safe_psql('nocopy', $schema);
query($sub, 'nocopy',
	'CREATE SUBSCRIPTION gnocopy CONNECTION $c$' . $pubconn . '$c$ PUBLICATION gpub WITH (copy_data = false)');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 120; UPDATE g_res SET v = 3 WHERE id = 1; COMMIT');
ok(catch_up('gnocopy'), 'copy_data = false subscription caught up');
is(query($sub, 'nocopy', q{SELECT coalesce(fencing_resource_high_water('s1'), 0)}), '0',
	'without the initial copy, the raise to 120 never arrives (an UPDATE of a missing row)');
like(query($sub, 'nocopy', q{SELECT string_agg(problem, ' | ') FROM fencing_check_subscription()}),
	qr/copy_data = false/, 'fencing_check_subscription() reports the state tables subscribed without their copy');
query($sub, 'nocopy', 'DROP SUBSCRIPTION gnocopy');

# Dropped: local writes are fenced, no longer refused.
# Replica mode, synchronous_commit = off: a first resource HWM written by
# fencing_resource_advance() commits durably. The statement runs alone on the
# publisher with wal_writer_delay long, so an unflushed commit shows as the
# flush LSN behind the insert LSN.
query($sub, $db, 'DROP SUBSCRIPTION gsub');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 29; UPDATE g_row SET v = 4 WHERE id = 1; COMMIT'),
	'TF001', 'dropped: row 1 refuses 29 below the local 30');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 130; UPDATE g_res SET v = 4 WHERE id = 1; COMMIT'),
	'', 'dropped: a current token is admitted');
$pub->append_conf('postgresql.conf', "wal_writer_delay = 10000ms\n");
$pub->restart;
my $flushed = query($pub, $db, <<'SQL');
SET synchronous_commit = off;
SET session_replication_role = replica;
SELECT fencing_resource_advance('replica-first', 9);
SELECT pg_current_wal_flush_lsn() >= pg_current_wal_insert_lsn();
SQL
is((split /\n/, $flushed)[-1], 't', 'a first raise in replica mode is flushed at commit');
is(query($pub, $db, q{SELECT fencing_resource_high_water('replica-first')}), '9', 'and it is there');

done_testing();
