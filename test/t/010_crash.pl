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
#    (0 acknowledged raises lost); the first lease token after recovery is above
#    every acknowledged one, and over all cycles no lease token was issued twice.
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

# --- 2. the crash loop ----------------------------------------------------------
my $acks = PostgreSQL::Test::Utils::tempdir('acks');
my $connstr = $node->connstr($db);

# A client: one psql session fed statement after statement, token 1, 2, 3, ...;
# after each statement returns psql prints the token (\echo runs only once
# the statement before it succeeded; ON_ERROR_STOP), so the last line of the
# client's file is its last acknowledged token. The feeding process is a fork
# that never returns into this script (it dies of SIGPIPE when psql exits, or
# _exits).
sub start_client
{
	my ($name, $sync, $make) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	return $pid if $pid;
	open STDOUT, '>', "$acks/$name" or POSIX::_exit(1);
	open STDERR, '>', "$acks/$name.err" or POSIX::_exit(1);
	my $ok = open my $psql, '|-', 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $connstr;
	POSIX::_exit(1) unless $ok;
	print $psql "SET synchronous_commit = $sync;\n";
	for (my $t = 1;; $t++)
	{
		print $psql $make->($t), "\n" or last;
	}
	POSIX::_exit(0);
}

sub last_ack
{
	my ($name) = @_;
	open my $fh, '<', "$acks/$name" or return 0;
	my $last = 0;
	while (<$fh>) { $last = $1 if /^(\d+)$/; }
	return $last;
}

sub all_acks
{
	my ($name) = @_;
	open my $fh, '<', "$acks/$name" or return ();
	return map { /^(\d+)$/ ? $1 : () } <$fh>;
}

# Writers per scope: (setup SQL, statement for token T, HWM query, a write
# with token S that must be refused). __ is replaced by the writer's name.
my %kinds = (
	row => [
		q{CREATE TABLE __ (item text PRIMARY KEY, fence fencing_token); INSERT INTO __ VALUES ('w', 0);},
		sub { "UPDATE __ SET fence = $_[0] WHERE item = 'w';" },
		q{SELECT fence FROM __ WHERE item = 'w'},
		sub { "UPDATE __ SET fence = $_[0] WHERE item = 'w'" } ],
	# Odd tokens re-insert key 1, even ones delete it: a DELETE whose only
	# raise is the tombstone.
	tomb => [
		q{CREATE TABLE __ (id int PRIMARY KEY, fence fencing_token);},
		sub {
			$_[0] % 2
			  ? "INSERT INTO __ VALUES (1, $_[0]);"
			  : "BEGIN; SET LOCAL fencing.token = $_[0]; DELETE FROM __ WHERE id = 1; COMMIT;";
		},
		q{SELECT fencing_high_water('__', '{"id": 1}')},
		sub { "INSERT INTO __ VALUES (1, $_[0]) ON CONFLICT (id) DO UPDATE SET fence = excluded.fence" } ],
	res => [
		q{CREATE TABLE __ (id int PRIMARY KEY, shard text, fence fencing_token);
		  SELECT fencing_protect('__', scope => 'resource', resource_column => 'shard');},
		sub { "INSERT INTO __ VALUES ($_[0], '__', $_[0]);" },
		q{SELECT fencing_resource_high_water('__')},
		sub { "INSERT INTO __ VALUES (-1, '__', $_[0])" } ],
	tab => [
		q{CREATE TABLE __ (id int PRIMARY KEY, fence fencing_token);
		  SELECT fencing_protect('__', scope => 'table');},
		sub { "INSERT INTO __ VALUES ($_[0], $_[0]);" },
		q{SELECT fencing_high_water('__')},
		sub { "INSERT INTO __ VALUES (-1, $_[0])" } ],
	# Advances: the resource HWM of a resource-scope table's shard, and a
	# table-scope table's HWM, raised without writing a row.
	advres => [
		q{CREATE TABLE __ (id int PRIMARY KEY, shard text, fence fencing_token);
		  SELECT fencing_protect('__', scope => 'resource', resource_column => 'shard');},
		sub { "SELECT fencing_resource_advance('__', $_[0]) \\g /dev/null" },
		q{SELECT fencing_resource_high_water('__')},
		sub { "INSERT INTO __ VALUES (-1, '__', $_[0])" } ],
	advtab => [
		q{CREATE TABLE __ (id int PRIMARY KEY, fence fencing_token);
		  SELECT fencing_protect('__', scope => 'table');},
		sub { "SELECT fencing_advance('__', $_[0]) \\g /dev/null" },
		q{SELECT fencing_high_water('__')},
		sub { "INSERT INTO __ VALUES (-1, $_[0])" } ],
);
my @writers;
for my $kind (sort keys %kinds)
{
	push @writers, [ "${kind}_off", $kind, 'off' ], [ "${kind}_on", $kind, 'on' ];
}
my @lease_clients = ([ 'lease_off1', 'off' ], [ 'lease_off2', 'off' ], [ 'lease_on1', 'on' ], [ 'lease_on2', 'on' ]);

my ($lost, $acked, $refused_fail, $lease_bad) = (0, 0, 0, 0);
my %issued;    # lease token -> times acknowledged
my $lease_acked = 0;
# Every cycle's tables, made up front (one session: keeps the loop fast).
my $setup_all = '';
for my $c (1 .. $cycles)
{
	for my $w (@writers)
	{
		(my $setup = $kinds{ $w->[1] }[0]) =~ s/__/c${c}_$w->[0]/g;
		$setup_all .= "$setup\n";
	}
}
$node->safe_psql($db, $setup_all);

for my $c (1 .. $cycles)
{
	my @pids;
	for my $w (@writers)
	{
		my ($name, $kind, $sync) = @$w;
		my $obj = "c${c}_$name";
		my $stmt = $kinds{$kind}[1];
		push @pids, start_client("$obj", $sync,
			sub { (my $s = $stmt->($_[0])) =~ s/__/$obj/g; "$s\n\\echo $_[0]" });
	}
	for my $l (@lease_clients)
	{
		my ($name, $sync) = @$l;
		push @pids, start_client("c${c}_$name", $sync, sub {
			"SELECT fencing_acquire('lease-crash', '$name', '2 s', wait => '60 s') AS t \\gset\n"
			  . "\\echo :t\nSELECT fencing_release('lease-crash', :t) \\g /dev/null";
		});
	}
	sleep(1 + rand(1));
	crash_node($node);
	waitpid($_, 0) for @pids;

	# Every writer: HWM >= its last acknowledged token, (last - 1) refused.
	# One session reads every HWM (and each tombstone writer's tombstone on its
	# own), another tries every (last - 1).
	my (@bad, %last, @hwm_sql, @stale);
	for my $w (@writers)
	{
		my ($name, $kind) = @$w;
		my $obj = "c${c}_$name";
		$last{$name} = last_ack($obj);
		(my $h = $kinds{$kind}[2]) =~ s/__/$obj/g;
		push @hwm_sql, "SELECT coalesce(($h)::text, '')";
		push @hwm_sql, "SELECT coalesce(max(hwm), 0) FROM fencing.row_tombstone WHERE relid = '$obj'::regclass"
		  if $kind eq 'tomb';
		(my $s = $kinds{$kind}[3]->($last{$name} - 1)) =~ s/__/$obj/g;
		push @stale, $s;
	}
	my @hwms = split /\n/, query($node, $db, join(";\n", @hwm_sql) . ';'), -1;
	my @states = sqlstates($node, $db, @stale);
	for my $w (@writers)
	{
		my ($name, $kind) = @$w;
		my $last = $last{$name};
		$acked += $last;
		my $hwm = shift @hwms;
		my $state = shift @states;
		my $kept = $last > 0 && $hwm ne '' && $hwm >= $last;
		if ($kind eq 'tomb')
		{
			# The last acknowledged DELETE's tombstone, on its own.
			my $tomb = shift @hwms;
			$kept = 0 if $tomb < $last - $last % 2;
		}
		$lost++ unless $kept;
		$refused_fail++ unless $state eq 'TF001';
		push @bad, "$name: last ack $last, HWM '$hwm', token " . ($last - 1) . " got '$state'"
		  unless $kept && $state eq 'TF001';
	}
	is(join('; ', @bad), '',
		"cycle $c: " . scalar(@writers) . ' writers (half synchronous_commit = off): every HWM >= last acknowledged, (last - 1) refused');

	# Leases: the first token after recovery is above every acknowledged one.
	my @tokens = map { all_acks("c${c}_$_->[0]") } @lease_clients;
	$issued{$_}++ for @tokens;
	$lease_acked += @tokens;
	my $max = 0;
	$max = $_ > $max ? $_ : $max for @tokens;
	# A lease acknowledged just before the crash (or a release lost with it)
	# stays live for up to its 2 s TTL.
	my $first = query($node, $db, q{SELECT fencing_acquire('lease-crash', 'check', '1 s', wait => '10 s')});
	$issued{$first}++;
	$lease_bad++ unless @tokens && $first > $max;
	ok(@tokens && $first > $max,
		"cycle $c: " . scalar(@tokens) . " lease tokens acknowledged; first token after recovery ($first) above them all ($max)");
	query($node, $db, "SELECT fencing_release('lease-crash', $first)");
}

my $dups = grep { $issued{$_} > 1 } keys %issued;
my $elapsed = time - $started;
note sprintf('%d cycles of SIGKILL: %d acknowledged raising commits by %d writers (half under synchronous_commit = off), '
	  . '%d lost; %d lease tokens acknowledged, %d issued twice; %.0f s',
	$cycles, $acked, scalar(@writers), $lost, $lease_acked, $dups, $elapsed);
is($lost, 0, "no acknowledged raise lost over $cycles cycles ($acked acknowledged raising commits)");
is($refused_fail, 0, "after every cycle, every writer's (last acknowledged - 1) was refused");
is($dups, 0, "no lease token issued twice over $cycles cycles ($lease_acked tokens)");
is($lease_bad, 0, "every cycle's first token after recovery was above every acknowledged one");
ok($acked > 20 * $cycles, "the writers made progress ($acked acknowledged commits)");

$node->stop;
done_testing();
