# Logical replication of a fenced database: what a subscriber must not lose
# beyond the promotion of 070_logical.pl, and what fencing_check_subscription()
# must report.
#  * Row scope: a row's HWM is its token. An applied UPDATE with a lower
#    token than a raise made on the subscriber, or an applied re-INSERT of a
#    key the subscriber deleted at a higher token, must not leave a stale
#    writer admitted on the subscriber.
#  * A namespace claimed at run time on the publisher is unclaimed on the
#    subscriber: another role must not take it and reset its HWMs.
#  * fencing_resource_reset() on the subscriber, then a raise on the
#    publisher: apply's UPDATE finds no row to update and drops the raise.
#  * fencing_publish() on a publication with a row filter or a column list
#    on a state table.
#  * copy_data = false: the publisher's state rows never arrive, and each
#    later raise is an UPDATE of a row the subscriber does not have.
#  * A data-only restore over the database a row was deleted from since.
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
SQL
$pub->safe_psql($db, $schema);
$sub->safe_psql($db, $schema);
query($pub, $db, 'CREATE PUBLICATION gpub FOR TABLE g_row, g_res');
query($pub, $db, q{SELECT count(*) FROM fencing_publish('gpub')});
# A state table with a row filter or a column list does not carry the state.
query($pub, $db, 'CREATE PUBLICATION gfilter FOR TABLE g_row, fencing.resource_hwm WHERE (hwm < 50)');
is(sqlstate($pub, $db, q{SELECT fencing_publish('gfilter')}), '55000',
	'fencing_publish() refuses a state table published with a row filter');
query($pub, $db, 'ALTER PUBLICATION gfilter SET TABLE g_row, fencing.lease (namespace, resource, token)');
is(sqlstate($pub, $db, q{SELECT fencing_publish('gfilter')}), '55000',
	'fencing_publish() refuses a state table published with a column list');
query($pub, $db, 'DROP PUBLICATION gfilter');
query($pub, $db, q{INSERT INTO g_row VALUES (1, 0, 10), (2, 0, 10); INSERT INTO g_res VALUES (1, 's1', 0, 10)});
my $pubconn = $pub->connstr($db);
query($sub, $db, 'CREATE SUBSCRIPTION gsub CONNECTION $c$' . $pubconn . '$c$ PUBLICATION gpub');

sub catch_up
{
	my ($subname) = @_;
	my $lsn = query($pub, $db, 'SELECT pg_current_wal_lsn()');
	my $deadline = time + 60;
	while (time < $deadline)
	{
		my $synced = query($sub, $db,
			q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')});
		my $applied = query($pub, $db,
			"SELECT coalesce(bool_and(replay_lsn >= '$lsn'), false) FROM pg_stat_replication WHERE application_name = '$subname'");
		return 1 if $synced eq 't' && $applied eq 't';
		sleep 0.2;
	}
	return 0;
}
ok(catch_up('gsub'), 'initial sync');
is(query($sub, $db, 'SELECT count(*) FROM fencing_check_subscription()'), '0', 'nothing reported after a full sync');

# Row scope, while subscribed: the subscriber raises row 1 to 50 and deletes
# row 2 at 50; the publisher then writes row 1 at 20 and re-inserts row 2 at
# 20 (both fenced there, against its own HWMs of 10).
query($sub, $db, 'BEGIN; SET LOCAL fencing.token = 50; UPDATE g_row SET v = 1 WHERE id = 1; COMMIT');
query($sub, $db, 'BEGIN; SET LOCAL fencing.token = 50; DELETE FROM g_row WHERE id = 2; COMMIT');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 20; UPDATE g_row SET v = 2 WHERE id = 1; COMMIT');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 15; DELETE FROM g_row WHERE id = 2; COMMIT');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 20; INSERT INTO g_row VALUES (2, 2); COMMIT');
ok(catch_up('gsub'), 'row-scope writes applied');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 30; UPDATE g_row SET v = 3 WHERE id = 1; COMMIT'),
	'TF001', 'a row raised to 50 on the subscriber refuses 30 after a lower applied UPDATE');
is(sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 30; UPDATE g_row SET v = 3 WHERE id = 2; COMMIT'),
	'TF001', 'a key deleted at 50 on the subscriber refuses 30 after an applied re-INSERT at 20');

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

# A reset on the subscriber, then a raise on the publisher (acknowledged).
query($sub, $db, q{SELECT fencing_resource_reset('s1')});
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 100; UPDATE g_res SET v = 1 WHERE id = 1; COMMIT');
ok(catch_up('gsub'), 'the raise after the reset applied');
my $reported = query($sub, $db, 'SELECT count(*) FROM fencing_check_subscription()');
my $refused = sqlstate($sub, $db, 'BEGIN; SET LOCAL fencing.token = 50; UPDATE g_res SET v = 2 WHERE id = 1; COMMIT');
ok($refused eq 'TF001' || $reported ne '0',
	"the publisher's raise to 100 after a reset on the subscriber is kept or reported (50: '$refused', problems: $reported)");

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

# A data-only restore (session_replication_role = replica) over the database
# it was dumped from: rows deleted since, at a higher token, comes back with
# its old token; its key must still refuse what the delete fenced.
my $dump = $pub->basedir . '/g.dump';
$pub->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $pub->connstr($db) ], 'pg_dump -Fc');
query($pub, $db, 'BEGIN; SET LOCAL fencing.token = 40; DELETE FROM g_row; COMMIT');
{
	local $ENV{PGOPTIONS} = '-c session_replication_role=replica';
	$pub->command_ok([ 'pg_restore', '--data-only', '-t', 'g_row', '-d', $pub->connstr($db), $dump ],
		'data-only restore of g_row');
}
is(query($pub, $db, 'SELECT fence FROM g_row WHERE id = 2'), '20', 'the deleted row is back with its dumped token');
is(sqlstate($pub, $db, 'BEGIN; SET LOCAL fencing.token = 30; UPDATE g_row SET v = 4 WHERE id = 2; COMMIT'),
	'TF001', 'a key deleted at 40 refuses 30 after a data-only restore brought its row back at 20');

# Replica mode, synchronous_commit = off: a first resource HWM written by
# fencing_resource_advance() commits durably. The statement runs alone on the
# publisher with wal_writer_delay long, so an unflushed commit shows as the
# flush LSN behind the insert LSN.
query($sub, $db, 'DROP SUBSCRIPTION gsub');
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
