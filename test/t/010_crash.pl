# kill -9 durability.
#
# 1. Acknowledged fenced writes and their HWM raises (row tokens, tombstones,
#    resource and table HWMs) survive SIGKILL of the whole server; a write in
#    flight at the crash does not; stale writes are refused after recovery.
# 2. The crash loop: FENCING_TAP_CRASH_CYCLES (default 20) cycles of SIGKILL of
#    the postmaster and every backend while concurrent psql clients commit
#    fenced writes in every scope (row UPDATE, tombstone DELETE/re-INSERT,
#    resource and table INSERTs), advances (fencing_resource_advance,
#    fencing_advance) and lease acquire/release loops; half of the writers and
#    half of the lease clients run under synchronous_commit = off. Every client
#    records an acknowledgement outside the database (psql's \echo after the
#    statement returned, ON_ERROR_STOP) in a file. After each restart: every
#    HWM >= the last acknowledged value of its writer and (last - 1) is refused
#    (0 acknowledged raises lost), every writer having acknowledged at least
#    one write before the SIGKILL (waited for: a loaded machine can starve a
#    writer, whose empty record was once miscounted as a loss); the first lease
#    token after recovery is above every acknowledged one, and over all cycles
#    no lease token was issued twice.
# fsync is on (the framework switches it off).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Time::HiRes qw(time sleep);
use FencingTest;

my $started = time;
become_subreaper();
my $cycles = $ENV{FENCING_TAP_CRASH_CYCLES} || 20;
my $node = fresh_node('crash', conf => "max_connections = 60\n");
my $db = 'postgres';

# --- 1. one crash with known state --------------------------------------------
$node->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 10, 33), ('b', 10, 33);
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard');
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
SQL
query($node, $db, q{UPDATE inventory SET stock = 9, fence = 34 WHERE item = 'a'});
query($node, $db, q{BEGIN; SET LOCAL fencing.token = 40; DELETE FROM inventory WHERE item = 'b'; COMMIT;});
query($node, $db, q{INSERT INTO orders VALUES (1, 's1', 50)});
query($node, $db, q{INSERT INTO ledger VALUES (1, 60)});
# In flight when the server dies: never acknowledged, must vanish.
my $inflight = $node->background_psql($db, on_error_stop => 0);
$inflight->query_until(qr/started/, q{
BEGIN; UPDATE inventory SET fence = 99 WHERE item = 'a';
\echo started
SELECT pg_sleep(60);
});
crash_node($node);
eval { $inflight->quit };

is(query($node, $db, 'SELECT 1'), '1', 'server recovered after SIGKILL of postmaster and backends');
is(query($node, $db, q{SELECT fence FROM inventory WHERE item = 'a'}), '34',
	'row token survived; the unacknowledged in-flight write did not');
is(query($node, $db, q{SELECT fencing_high_water('inventory', '{"item": "b"}')}), '40', 'tombstone survived');
is(query($node, $db, q{SELECT fencing_resource_high_water('s1')}), '50', 'resource HWM survived');
is(query($node, $db, q{SELECT fencing_high_water('ledger')}), '60', 'table HWM survived');
is(sqlstate($node, $db, q{UPDATE inventory SET fence = 33 WHERE item = 'a'}), 'TF001', 'stale UPDATE refused after recovery');
is(sqlstate($node, $db, q{INSERT INTO inventory VALUES ('b', 1, 39)}), 'TF001', 'stale re-INSERT refused after recovery');
is(sqlstate($node, $db, q{INSERT INTO orders VALUES (2, 's1', 49)}), 'TF001', 'stale resource write refused after recovery');
is(sqlstate($node, $db, q{INSERT INTO ledger VALUES (2, 59)}), 'TF001', 'stale table write refused after recovery');

# A waiter sleeps on its latch and is woken by a committed release.
my $t0 = query($node, $db, q{SELECT fencing_acquire('lease-wake', 'a', '1 hour')});
my $waker = $node->background_psql($db);
$waker->query_until(qr/go/, "\\echo go\nSELECT pg_sleep(1); SELECT fencing_release('lease-wake', $t0);\n");
is(query($node, $db, q{SELECT extract(epoch FROM clock_timestamp() - now()) < 1.5
        FROM (SELECT fencing_acquire('lease-wake', 'b', '1 hour', wait => '20 s') AS t) s WHERE t IS NOT NULL}),
	't', 'a waiter is woken by the release (within 0.5 s of it), not by its 20 s wait');
$waker->quit;

# Releases commit without waiting for a WAL flush when they are all their
# transaction wrote; a transaction that also wrote anything else, every
# renewal (clients time their lost signal by it: 083_renew_durable.pl) and
# every acquire still flush (synchronous_commit = on here). Counted in WAL
# fsyncs (fsync is on): pg_stat_wal.wal_sync, which PostgreSQL 18 moved to
# pg_stat_io (object 'wal'); each loop in its own session, whose exit flushes
# its statistics. The leases released are acquired beforehand, 200 in one
# transaction per loop.
$node->safe_psql($db, 'CREATE TABLE cheap_other (n int)');
my $tc = query($node, $db, q{SELECT fencing_acquire('lease-cheap', 'a', '1 hour')});
my $wal_syncs_sql =
  query($node, $db, q{SELECT current_setting('server_version_num')::int >= 180000}) eq 't'
  ? q{SELECT COALESCE(sum(fsyncs), 0)::bigint FROM pg_stat_io WHERE object = 'wal'}
  : q{SELECT wal_sync FROM pg_stat_wal};
my $syncs_of = sub {
	my ($sql) = @_;
	my $before = query($node, $db, $wal_syncs_sql);
	$node->safe_psql($db, join("\n", map { my $s = $sql; $s =~ s/\bN\b/$_/g; $s } 1 .. 200));
	return query($node, $db, $wal_syncs_sql) - $before;
};
my $acquire_200 = sub {
	my ($prefix) = @_;
	$node->safe_psql($db,
		"SELECT count(fencing_acquire('$prefix' || i, 'a', '1 hour')) FROM generate_series(1, 200) i");
};
$acquire_200->('rel-');
my $releases = $syncs_of->(q{SELECT fencing_release('rel-N', 1);});
my $renews = $syncs_of->(qq{SELECT fencing_renew('lease-cheap', $tc, '1 hour');});
my $cycles_syncs = $syncs_of->(q{SELECT fencing_release('lease-cycle', fencing_acquire('lease-cycle', 'a', '1 hour'));});
$acquire_200->('before-');
my $mixed_before = $syncs_of->(q{BEGIN; INSERT INTO cheap_other VALUES (1); SELECT fencing_release('before-N', 1); COMMIT;});
$acquire_200->('after-');
my $mixed_after = $syncs_of->(q{BEGIN; SELECT fencing_release('after-N', 1); INSERT INTO cheap_other VALUES (1); COMMIT;});
note "WAL syncs per 200 transactions: release only $releases, renew only $renews, "
  . "acquire+release $cycles_syncs, insert then release $mixed_before, release then insert $mixed_after";
is(query($node, $db, q{SELECT count(*) FROM fencing.lease WHERE resource ~ '^(rel|before|after)-' AND released_at IS NOT NULL}),
	'600', 'the 600 releases measured all released a lease');
ok($releases < 50, "200 releases alone commit without a WAL flush each ($releases syncs)");
ok($renews >= 200, "200 renews each flush ($renews syncs)");
ok($cycles_syncs >= 200, "200 acquires each flush ($cycles_syncs syncs)");
ok($mixed_before >= 200, "a release after another write keeps the flush ($mixed_before syncs)");
ok($mixed_after >= 200, "a write after a release keeps the flush ($mixed_after syncs)");

# --- 2. the crash loop ----------------------------------------------------------
# The clients and checks are FencingTest's workload: a writer per scope and
# synchronous_commit setting, and lease loops.
my $acks = PostgreSQL::Test::Utils::tempdir('acks');
my $connstr = $node->connstr($db);
my ($lost, $acked, $refused_fail, $lease_bad) = (0, 0, 0, 0);
my %issued;    # lease token -> times acknowledged
my $lease_acked = 0;
# Every cycle's tables, made up front (one session: keeps the loop fast).
$node->safe_psql($db, join '', map { workload_setup("c$_") } 1 .. $cycles);

for my $c (1 .. $cycles)
{
	my @pids = start_workload($connstr, $acks, "c$c", 'lease-crash');
	sleep(1 + rand(1));
	# On a loaded machine a writer may not have committed anything yet: with
	# nothing acknowledged its cycle would check nothing. Every writer first.
	my @idle = wait_first_acks($acks, "c$c", 60);
	is(join(', ', @idle), '', "cycle $c: every writer acknowledged a write before the SIGKILL");
	crash_node($node);
	waitpid($_, 0) for @pids;

	my $r = check_workload($node, $db, $acks, "c$c", 'lease-crash');
	$acked += $r->{acked};
	$lost += $r->{lost};
	$refused_fail += $r->{refused_fail};
	my @bad = @{ $r->{bad} };
	is(join('; ', @bad), '',
		"cycle $c: " . scalar(@WRITERS) . ' writers (half synchronous_commit = off): every HWM >= last acknowledged, (last - 1) refused');

	# Leases: the first token after recovery is above every acknowledged one.
	my ($tokens, $first, $max) = @$r{qw(tokens first max)};
	$issued{$_}++ for @$tokens, $first;
	$lease_acked += @$tokens;
	$lease_bad++ unless @$tokens && $first > $max;
	ok(@$tokens && $first > $max,
		"cycle $c: " . scalar(@$tokens) . " lease tokens acknowledged; first token after recovery ($first) above them all ($max)");
}

my $dups = grep { $issued{$_} > 1 } keys %issued;
my $elapsed = time - $started;
note sprintf('%d cycles of SIGKILL: %d acknowledged raising commits by %d writers (half under synchronous_commit = off), '
	  . '%d lost; %d lease tokens acknowledged, %d issued twice; %.0f s',
	$cycles, $acked, scalar(@WRITERS), $lost, $lease_acked, $dups, $elapsed);
is($lost, 0, "no acknowledged raise lost over $cycles cycles ($acked acknowledged raising commits)");
is($refused_fail, 0, "after every cycle, every writer's (last acknowledged - 1) was refused");
is($dups, 0, "no lease token issued twice over $cycles cycles ($lease_acked tokens)");
is($lease_bad, 0, "every cycle's first token after recovery was above every acknowledged one");
ok($acked > 20 * $cycles, "the writers made progress ($acked acknowledged commits)");

$node->stop;
done_testing();
