# Failover to a synchronous standby, with writers running.
#
# A primary with synchronous_standby_names = 'standby1' and a streaming
# standby of that name. The durability rule: a commit that raises an HWM waits
# for the synchronous standby even under synchronous_commit = off or local;
# one that raises nothing does not. Then known state, then the workload of the
# crash suite (a writer per scope, fenced writes, advances, lease loops, half
# of them under synchronous_commit = off) runs against the primary while the
# primary's postmaster and backends are SIGKILLed and the standby promoted.
# On the new primary: every HWM >= the last acknowledged value, (last - 1)
# refused, stale tokens of the known state refused, the first lease token
# above every acknowledged one, none issued twice. fsync is on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use FencingTest;

my $started = time;
become_subreaper();
my $db = 'postgres';
my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', <<'CONF');
fsync = on
synchronous_standby_names = 'standby1'
synchronous_commit = on
max_connections = 60
CONF
$primary->start;
$primary->backup('base');
# The standby's primary_conninfo carries application_name=standby1.
my $standby = PostgreSQL::Test::Cluster->new('standby1');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
# Once promoted it stands alone: it must not wait for a standby of its own.
$standby->append_conf('postgresql.conf', "synchronous_standby_names = ''\n");
$standby->start;

my $sync_sql = q{SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'};
$primary->poll_query_until($db, $sync_sql, 'sync');
is(query($primary, $db, $sync_sql), 'sync', 'standby is synchronous');

$primary->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
INSERT INTO inventory VALUES ('a', 10, 33), ('b', 10, 33);
UPDATE inventory SET stock = 9, fence = 34 WHERE item = 'a';
BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inventory WHERE item = 'b'; COMMIT;
INSERT INTO orders VALUES (1, 's1', 50);
CREATE TABLE dur (id int PRIMARY KEY, fence fencing_token);
INSERT INTO dur VALUES (1, 1);
SQL

# The durability rule, with the standby down: a raising commit waits (wait
# event SyncRep) until cancelled; a same-token one does not wait.
$standby->stop('fast');
sub waits
{
	my ($sync, $sql) = @_;
	my $bg = $primary->background_psql($db, on_error_stop => 0);
	$bg->query_until(qr/sent/, "SET synchronous_commit = $sync;\n\\echo sent\n$sql;\n");
	sleep 1;
	my $n = query($primary, $db,
		q{SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep'});
	$bg->quit;
	return $n;
}
is(waits('off', 'UPDATE dur SET fence = 2 WHERE id = 1'), '1',
	'raising commit under synchronous_commit = off waits for the standby');
is(waits('local', 'UPDATE dur SET fence = 3 WHERE id = 1'), '1',
	'raising commit under synchronous_commit = local waits for the standby');
is(waits('off', 'UPDATE dur SET fence = 3 WHERE id = 1'), '0',
	'same-token write under synchronous_commit = off does not wait');
$standby->start;
$primary->poll_query_until($db, $sync_sql, 'sync');
query($primary, $db, 'DROP TABLE dur');

# The workload, then the failover while it runs.
my $acks = PostgreSQL::Test::Utils::tempdir('acks');
$primary->safe_psql($db, workload_setup('f'));
my @pids = start_workload($primary->connstr($db), $acks, 'f', 'lease-failover');
sleep 2;
# The last acknowledged raise of the known state, immediately before the fault.
query($primary, $db, q{SELECT fenced_update('inventory', 35, '{"item": "a"}', '{"stock": 8}')});
crash_node($primary, restart => 0);
$standby->promote;
waitpid($_, 0) for @pids;
is(query($standby, $db, 'SELECT pg_is_in_recovery()'), 'f', 'standby promoted');

my $r = check_workload($standby, $db, $acks, 'f', 'lease-failover');
is(join('; ', @{ $r->{bad} }), '',
	scalar(@WRITERS) . " writers ($r->{acked} acknowledged raising commits, half under synchronous_commit = off): "
	  . 'on the new primary every HWM >= last acknowledged, (last - 1) refused');
my ($tokens, $first, $max) = @$r{qw(tokens first max)};
my %seen;
my $dups = grep { $seen{$_}++ } @$tokens, $first;
ok(@$tokens && $first > $max,
	scalar(@$tokens) . " lease tokens acknowledged; the new primary's first token ($first) is above them all ($max)");
is($dups, 0, 'no lease token issued twice across the failover');

is(query($standby, $db, q{SELECT stock || '|' || fence FROM inventory WHERE item = 'a'}), '8|35',
	'last acknowledged write is on the new primary');
is(query($standby, $db, q{SELECT fencing_high_water('inventory', '{"item": "b"}')}), '40', 'tombstone is on the new primary');
is(query($standby, $db, q{SELECT fencing_resource_high_water('s1')}), '50', 'resource HWM is on the new primary');
is(query($standby, $db, 'SELECT count(*) FROM fencing_protected WHERE guard_ok'),
	2 + scalar(@WRITERS), 'policies and guards are on the new primary');
is(sqlstate($standby, $db, q{UPDATE inventory SET fence = 34 WHERE item = 'a'}), 'TF001', 'stale UPDATE refused after failover');
is(sqlstate($standby, $db, q{INSERT INTO inventory VALUES ('b', 1, 39)}), 'TF001', 'stale re-INSERT refused after failover');
is(sqlstate($standby, $db, q{INSERT INTO orders VALUES (2, 's1', 49)}), 'TF001', 'stale resource write refused after failover');
is(query($standby, $db, q{SELECT fenced_update('inventory', 36, '{"item": "a"}', '{"stock": 7}')}), '1',
	'fresh token admitted after failover');
note sprintf('failover under load: %d acknowledged raising commits, %d HWM regressions, %d lease tokens, %d issued twice; %.0f s',
	$r->{acked}, $r->{lost}, scalar(@$tokens), $dups, time - $started);

$standby->stop;
done_testing();
