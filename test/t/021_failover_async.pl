# What asynchronous replication can lose on failover, and the settings that
# prevent it.
#
# Each case: a primary and a streaming standby, state acknowledged and on the
# standby; then the standby stops receiving WAL (primary_conninfo emptied, as
# when it lags or the network drops), fenced writes and a lease acquire are
# tried on the primary, the primary is SIGKILLed and the standby promoted.
#
# - async (no synchronous_standby_names): the primary acknowledges the raises
#   and the lease; the promoted standby lacks them: the HWM is below the last
#   acknowledged token, the fenced-off holder's stale token is accepted again,
#   and the acknowledged lease token is issued a second time.
# - sync (synchronous_standby_names names the standby, synchronous_commit =
#   on; the session even says off): the raising commits and the acquire wait
#   for the standby and are never acknowledged; every acknowledged raise is on
#   the promoted standby and stale tokens are refused. With synchronous_commit
#   = remote_apply an acknowledged raise is visible on the standby at once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use FencingTest;

become_subreaper();
my $db = 'postgres';

# pair(NAME, SYNC): a started primary and standby ("NAME_standby"),
# synchronous when SYNC, with the known state on both.
sub pair
{
	my ($name, $sync) = @_;
	my $primary = PostgreSQL::Test::Cluster->new("${name}_primary");
	$primary->init(allows_streaming => 1);
	$primary->append_conf('postgresql.conf', "fsync = on\nsynchronous_commit = on\n"
		  . ($sync ? "synchronous_standby_names = '${name}_standby'\n" : ''));
	$primary->start;
	$primary->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	$standby->append_conf('postgresql.conf', "synchronous_standby_names = ''\n");
	$standby->start;
	$primary->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 10, 33), ('b', 10, 33);
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
INSERT INTO orders VALUES (1, 's1', 50);
SELECT fencing_release('L', fencing_acquire('L', 'first', '1 hour'));
SQL
	$primary->wait_for_catchup($standby, 'replay');
	return ($primary, $standby);
}

# The standby stops receiving WAL: its walreceiver goes away.
sub detach
{
	my ($primary, $standby) = @_;
	$standby->append_conf('postgresql.conf', "primary_conninfo = ''\n");
	$standby->reload;
	$primary->poll_query_until($db, 'SELECT count(*) = 0 FROM pg_stat_replication')
	  or die 'standby still streaming';
	return;
}

sub failover
{
	my ($primary, $standby) = @_;
	crash_node($primary, restart => 0);
	$standby->promote;
	$standby->poll_query_until($db, 'SELECT NOT pg_is_in_recovery()');
	return;
}

# --- async -------------------------------------------------------------------
{
	my ($primary, $standby) = pair('async', 0);
	detach($primary, $standby);
	# Acknowledged on the primary (synchronous_commit = on: flushed there).
	is(query($primary, $db, q{SELECT fenced_update('inventory', 34, '{"item": "a"}', '{"stock": 9}')}), '1',
		'async: raise of row a to 34 acknowledged by the primary');
	query($primary, $db, q{BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inventory WHERE item = 'b'; COMMIT;});
	query($primary, $db, q{INSERT INTO orders VALUES (2, 's1', 60)});
	my $lease = query($primary, $db, q{SELECT fencing_acquire('L', 'h1', '1 hour')});
	ok($lease > 0, "async: lease token $lease acknowledged by the primary");
	failover($primary, $standby);

	my $fence = query($standby, $db, q{SELECT fence FROM inventory WHERE item = 'a'});
	ok($fence < 34, "async: the promoted standby lost the acknowledged raise (row a at $fence, acknowledged 34)");
	is(sqlstate($standby, $db, q{UPDATE inventory SET fence = 33 WHERE item = 'a'}), '',
		'async: the fenced-off holder (token 33) is accepted again after failover');
	is(query($standby, $db, q{SELECT count(*) FROM inventory WHERE item = 'b'}), '1',
		'async: the acknowledged DELETE with token 40 is lost: row b is back');
	is(sqlstate($standby, $db, q{UPDATE inventory SET fence = 39 WHERE item = 'b'}), '',
		'async: ... and its tombstone: token 39 writes the deleted key again');
	is(sqlstate($standby, $db, q{INSERT INTO orders VALUES (3, 's1', 55)}), '',
		'async: the acknowledged resource raise (60) is lost: token 55 accepted');
	my $again = query($standby, $db, q{SELECT fencing_acquire('L', 'h2', '1 hour')});
	is($again, $lease, "async: lease token $lease, acknowledged by the old primary, is issued a second time");
	$standby->stop;
}

# --- sync --------------------------------------------------------------------
{
	my ($primary, $standby) = pair('sync', 1);
	is(query($primary, $db, q{SELECT sync_state FROM pg_stat_replication}), 'sync', 'sync: standby is synchronous');
	# remote_apply: once acknowledged, the raise is visible on the standby.
	query($primary, $db, q{SET synchronous_commit = remote_apply;
		SELECT fenced_update('inventory', 34, '{"item": "a"}', '{"stock": 9}')});
	is(query($standby, $db, q{SELECT fence FROM inventory WHERE item = 'a'}), '34',
		'sync, remote_apply: the acknowledged raise is already visible on the standby');
	my $before = query($primary, $db, q{SELECT token FROM fencing_leases WHERE resource = 'L'});
	detach($primary, $standby);
	# The session asks for synchronous_commit = off; the raising commits wait
	# for the standby all the same (fencing's durability rule), and so are
	# never acknowledged.
	my @waiting;
	for my $sql (q{SELECT fenced_update('inventory', 35, '{"item": "a"}', '{"stock": 8}')},
		q{BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inventory WHERE item = 'b'; COMMIT},
		q{INSERT INTO orders VALUES (2, 's1', 60)},
		q{SELECT fencing_acquire('L', 'h1', '1 hour')})
	{
		my $bg = $primary->background_psql($db, on_error_stop => 0);
		$bg->query_until(qr/sent/, "SET synchronous_commit = off;\n\\echo sent\n$sql;\n\\echo acknowledged\n");
		push @waiting, $bg;
	}
	$primary->poll_query_until($db, q{SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'}, '4');
	sleep 1;
	is(query($primary, $db, q{SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'}), '4',
		'sync: the raises and the acquire wait for the standby (SyncRep), unacknowledged');
	failover($primary, $standby);
	my $acked = 0;
	for my $bg (@waiting)
	{
		eval { $bg->quit };
		$acked++ if $bg->{stdout} =~ /acknowledged/;
	}
	is($acked, 0, 'sync: none of them was acknowledged before the primary died');
	is(query($standby, $db, q{SELECT fence FROM inventory WHERE item = 'a'}), '34',
		'sync: every acknowledged raise is on the promoted standby (row a at 34)');
	is(sqlstate($standby, $db, q{UPDATE inventory SET fence = 33 WHERE item = 'a'}), 'TF001',
		'sync: a token below the last acknowledged one is refused after failover');
	is(sqlstate($standby, $db, q{INSERT INTO orders VALUES (3, 's1', 49)}), 'TF001',
		'sync: stale resource write refused after failover');
	my $next = query($standby, $db, q{SELECT fencing_acquire('L', 'h2', '1 hour')});
	ok($next > $before, "sync: the next lease token ($next) is above the last acknowledged one ($before)");
	$standby->stop;
}

done_testing();
