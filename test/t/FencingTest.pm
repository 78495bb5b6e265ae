# Helpers shared by the TAP suites in test/t (PostgreSQL::Test::Cluster).
package FencingTest;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();
use Config;
use Time::HiRes ();

our @EXPORT = qw(query sqlstate sqlstates fresh_node crash_node become_subreaper
  workload_setup start_workload wait_first_acks check_workload @WRITERS repo_root update_chain default_version
  logical_catch_up);


# logical_catch_up(PUB, SUB, DB, SUBNAME, TIMEOUT): the subscription SUBNAME on
# SUB has applied everything PUB has written so far, and every table is
# synchronized; false on a timeout.
sub logical_catch_up
{
	my ($pub, $sub, $db, $subname, $timeout) = @_;
	my $lsn = query($pub, $db, 'SELECT pg_current_wal_lsn()');
	my $deadline = time + $timeout;
	while (time < $deadline)
	{
		my $synced = query($sub, $db,
			q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate <> 'r'});
		my $applied = query($pub, $db,
			"SELECT coalesce(bool_and(replay_lsn >= '$lsn'), false) FROM pg_stat_replication WHERE application_name = '$subname'");
		return 1 if $synced eq 't' && $applied eq 't';
		sleep 0.2;
	}
	return 0;
}

# The repository root (test/t/run.sh exports it; else two levels up from here).
sub repo_root
{
	return $ENV{FENCING_ROOT} if $ENV{FENCING_ROOT};
	my $dir = __FILE__;
	$dir =~ s{/[^/]*$}{};
	return "$dir/../..";
}

# query(NODE, DB, SQL): the result of a statement that must succeed (-At output).
sub query
{
	my ($node, $db, $sql) = @_;
	return $node->safe_psql($db, $sql);
}

# sqlstate(NODE, DB, SQL): the SQLSTATE the statement fails with, '' when it
# succeeds.
sub sqlstate
{
	my ($node, $db, $sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql(
		$db, $sql,
		stdout => \$out,
		stderr => \$err,
		on_error_stop => 1,
		extra_params => [ '-v', 'VERBOSITY=sqlstate' ]);
	return $1 if $err =~ /ERROR:\s+([0-9A-Z]{5})/;
	return '';
}

# sqlstates(NODE, DB, SQL...): the SQLSTATE of each statement ('00000' when
# it succeeds), all in one session.
sub sqlstates
{
	my ($node, $db, @stmts) = @_;
	my $script = join '', map { "$_;\n\\echo :SQLSTATE\n" } @stmts;
	my ($out, $err) = ('', '');
	$node->psql($db, $script, stdout => \$out, stderr => \$err, on_error_stop => 0);
	my @states = grep { /^[0-9A-Z]{5}$/ } split /\n/, $out;
	die "sqlstates: expected " . scalar(@stmts) . " results, got: $out\n$err" unless @states == @stmts;
	return @states;
}

# fresh_node(NAME, CONF...): a new cluster with fsync back on (the framework
# switches it off; durability is what these suites test), started.
sub fresh_node
{
	my ($name, %params) = @_;
	my $conf = delete $params{conf} // '';
	my $install = delete $params{install_path};
	my $node = PostgreSQL::Test::Cluster->new($name, $install ? (install_path => $install) : ());
	$node->init(%params);
	$node->append_conf('postgresql.conf', "fsync = on\n$conf");
	$node->start;
	return $node;
}

# crash_node(NODE): SIGKILL of the postmaster and every child at once (no
# shutdown checkpoint, no clean exit of any backend), then a restart through
# crash recovery (not with restart => 0). The postmaster is stopped (SIGSTOP) first so that it forks
# nothing between the listing of its children and the kill. The stale
# postmaster.pid stays (PostgreSQL must cope) unless the dead postmaster is
# still an unreaped zombie.
sub crash_node
{
	my ($node, %opt) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';
	open my $fh, '<', $pidfile or die "no $pidfile: $!";
	my $pid = <$fh>;
	close $fh;
	chomp $pid;
	kill 'STOP', $pid;
	my @children = children_of($pid);
	# Children first: a backend that saw its postmaster die before its own
	# SIGKILL arrived would exit on its own (FATAL: unexpected postmaster exit).
	kill 'KILL', @children;
	kill 'KILL', $pid;
	my @pids = ($pid, @children);
	# A dead postmaster left unreaped (a zombie) still answers kill 0, and the
	# new postmaster would take its lock files for a live one's: reap it (this
	# process is their subreaper) or wait for whoever reaps orphans.
	for (1 .. 1200)
	{
		waitpid($_, POSIX::WNOHANG()) for @pids;
		last unless grep { kill 0, $_ } @pids;
		select undef, undef, undef, 0.025;
	}
	$node->{_pid} = undef;
	$node->start unless defined $opt{restart} && !$opt{restart};
	return;
}

# The PIDs whose parent is PID, from /proc.
sub children_of
{
	my ($parent) = @_;
	my @kids;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh> // next;
		push @kids, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) / && $2 == $parent;
	}
	return @kids;
}

# Orphans (the postmaster pg_ctl started, and the backends of a killed one)
# become children of this process, which can then reap them at once: PID 1 of
# a container may reap late or never. prctl(PR_SET_CHILD_SUBREAPER) on Linux
# (syscall 157 on x86_64, 167 on aarch64); elsewhere crash_node waits for
# another reaper.
sub become_subreaper
{
	my %prctl = (x86_64 => 157, aarch64 => 167);
	my ($arch) = $Config::Config{archname} =~ /^([^-]+)/;
	syscall($prctl{$arch}, 36, 1, 0, 0, 0) if $^O eq 'linux' && $prctl{$arch};
	return;
}

# A client: one psql session fed statement after statement, token 1, 2, 3, ...;
# after each statement returns psql prints the token (\echo runs only once
# the statement before it succeeded; ON_ERROR_STOP), so the last line of the
# client's file is its last acknowledged token. The feeding process is a fork
# that never returns into this script (it dies of SIGPIPE when psql exits, or
# _exits).
sub start_client
{
	my ($connstr, $acks, $name, $sync, $make) = @_;
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
	my ($acks, $name) = @_;
	open my $fh, '<', "$acks/$name" or return 0;
	my $last = 0;
	while (<$fh>) { $last = $1 if /^(\d+)$/; }
	return $last;
}

sub all_acks
{
	my ($acks, $name) = @_;
	open my $fh, '<', "$acks/$name" or return ();
	return map { /^(\d+)$/ ? $1 : () } <$fh>;
}

# Writers per scope: (setup SQL, statement for token T, HWM query, a write
# with token S that must be refused). __ is replaced by the writer's name.
my $res_setup = q{CREATE TABLE __ (id int PRIMARY KEY, shard text, fence fencing_token);
  SELECT fencing_protect('__', scope => 'resource', resource_column => 'shard');};
my $tab_setup = q{CREATE TABLE __ (id int PRIMARY KEY, fence fencing_token);
  SELECT fencing_protect('__', scope => 'table');};
my $res_stale = sub { "INSERT INTO __ VALUES (-1, '__', $_[0])" };
my $tab_stale = sub { "INSERT INTO __ VALUES (-1, $_[0])" };
our %KINDS = (
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
		$res_setup,
		sub { "INSERT INTO __ VALUES ($_[0], '__', $_[0]);" },
		q{SELECT fencing_resource_high_water('__')},
		$res_stale ],
	tab => [
		$tab_setup,
		sub { "INSERT INTO __ VALUES ($_[0], $_[0]);" },
		q{SELECT fencing_high_water('__')},
		$tab_stale ],
	# Advances: the resource HWM of a resource-scope table's shard, and a
	# table-scope table's HWM, raised without writing a row.
	advres => [
		$res_setup,
		sub { "SELECT fencing_resource_advance('__', $_[0]) \\g /dev/null" },
		q{SELECT fencing_resource_high_water('__')},
		$res_stale ],
	advtab => [
		$tab_setup,
		sub { "SELECT fencing_advance('__', $_[0]) \\g /dev/null" },
		q{SELECT fencing_high_water('__')},
		$tab_stale ],
);
our @WRITERS;
for my $kind (sort keys %KINDS)
{
	push @WRITERS, [ "${kind}_off", $kind, 'off' ], [ "${kind}_on", $kind, 'on' ];
}
# The lease clients: acquire (TTL 2 s, waiting up to 60 s), print the token,
# renew, release (renew and release commit without a WAL flush: they are all
# their transactions write); half under synchronous_commit = off.
our @LEASE_CLIENTS = ([ 'lease_off1', 'off' ], [ 'lease_off2', 'off' ], [ 'lease_on1', 'on' ], [ 'lease_on2', 'on' ]);

# workload_setup(PREFIX): SQL making the tables of one workload's writers.
sub workload_setup
{
	my ($prefix) = @_;
	my $sql = '';
	for my $w (@WRITERS)
	{
		(my $setup = $KINDS{ $w->[1] }[0]) =~ s/__/${prefix}_$w->[0]/g;
		$sql .= "$setup\n";
	}
	return $sql;
}

# start_workload(CONNSTR, ACKS, PREFIX, LEASE_RESOURCE): every writer and
# lease client started; returns their PIDs.
sub start_workload
{
	my ($connstr, $acks, $prefix, $resource) = @_;
	my @pids;
	for my $w (@WRITERS)
	{
		my ($name, $kind, $sync) = @$w;
		my $obj = "${prefix}_$name";
		my $stmt = $KINDS{$kind}[1];
		push @pids, start_client($connstr, $acks, $obj, $sync,
			sub { (my $s = $stmt->($_[0])) =~ s/__/$obj/g; "$s\n\\echo $_[0]" });
	}
	for my $l (@LEASE_CLIENTS)
	{
		my ($name, $sync) = @$l;
		push @pids, start_client($connstr, $acks, "${prefix}_$name", $sync, sub {
			"SELECT fencing_acquire('$resource', '$name', '2 s', wait => '60 s') AS t \\gset\n"
			  . "\\echo :t\nSELECT fencing_renew('$resource', :t, '2 s') \\g /dev/null\n"
			  . "SELECT fencing_release('$resource', :t) \\g /dev/null";
		});
	}
	return @pids;
}

# wait_first_acks(ACKS, PREFIX, SECONDS): waits until every writer has
# acknowledged at least one write, for at most SECONDS; returns the names of
# those that have not.
sub wait_first_acks
{
	my ($acks, $prefix, $seconds) = @_;
	my $deadline = Time::HiRes::time() + $seconds;
	while (1)
	{
		# Not grep/map over @WRITERS: last_ack's while (<$fh>) sets $_,
		# which would be an alias of (and overwrite) the element.
		my @idle;
		for my $w (@WRITERS)
		{
			push @idle, $w->[0] if last_ack($acks, "${prefix}_$w->[0]") == 0;
		}
		return @idle if !@idle || Time::HiRes::time() > $deadline;
		Time::HiRes::sleep(0.1);
	}
}

# check_workload(NODE, DB, ACKS, PREFIX, LEASE_RESOURCE), once the clients
# are gone: for every writer, its HWM >= its last acknowledged token and a
# write with (last - 1) refused; the lease tokens acknowledged, and the first
# token NODE issues next (a lease acknowledged just before the fault, or a
# release lost with it, stays live for up to its 2 s TTL). Returns
# { bad => [...], idle => [writers with nothing acknowledged], acked, lost,
# refused_fail, tokens => [...], first, max }.
sub check_workload
{
	my ($node, $db, $acks, $prefix, $resource) = @_;
	# One session reads every HWM (and each tombstone writer's tombstone on
	# its own), another tries every (last - 1).
	my (%r, %last, @hwm_sql, @stale);
	$r{$_} = 0 for qw(acked lost refused_fail);
	$r{bad} = [];
	$r{idle} = [];
	for my $w (@WRITERS)
	{
		my ($name, $kind) = @$w;
		my $obj = "${prefix}_$name";
		$last{$name} = last_ack($acks, $obj);
		(my $h = $KINDS{$kind}[2]) =~ s/__/$obj/g;
		push @hwm_sql, "SELECT coalesce(($h)::text, '')";
		push @hwm_sql, "SELECT coalesce(max(hwm), 0) FROM fencing.row_tombstone WHERE relid = '$obj'::regclass"
		  if $kind eq 'tomb';
		(my $s = $KINDS{$kind}[3]->($last{$name} - 1)) =~ s/__/$obj/g;
		push @stale, $s;
	}
	my @hwms = split /\n/, query($node, $db, join(";\n", @hwm_sql) . ';'), -1;
	my @states = sqlstates($node, $db, @stale);
	for my $w (@WRITERS)
	{
		my ($name, $kind) = @$w;
		my $last = $last{$name};
		$r{acked} += $last;
		my $hwm = shift @hwms;
		my $state = shift @states;
		if ($last == 0)
		{
			# Nothing acknowledged (an overloaded machine can starve a writer
			# until the fault): nothing was lost, and (last - 1) = -1 is no
			# token. Still bad (the writer checked nothing), but said so, not
			# counted as a loss; wait_first_acks before the fault avoids it.
			shift @hwms if $kind eq 'tomb';
			push @{ $r{idle} }, $name;
			push @{ $r{bad} }, "$name: nothing acknowledged (HWM '$hwm')";
			next;
		}
		my $kept = $last > 0 && $hwm ne '' && $hwm >= $last;
		if ($kind eq 'tomb')
		{
			# The last acknowledged DELETE's tombstone, on its own.
			my $tomb = shift @hwms;
			$kept = 0 if $tomb < $last - $last % 2;
		}
		$r{lost}++ unless $kept;
		$r{refused_fail}++ unless $state eq 'TF001';
		push @{ $r{bad} }, "$name: last ack $last, HWM '$hwm', token " . ($last - 1) . " got '$state'"
		  unless $kept && $state eq 'TF001';
	}
	my @tokens = map { all_acks($acks, "${prefix}_$_->[0]") } @LEASE_CLIENTS;
	my $max = 0;
	$max = $_ > $max ? $_ : $max for @tokens;
	my $first = query($node, $db, "SELECT fencing_acquire('$resource', 'check', '1 s', wait => '10 s')");
	query($node, $db, "SELECT fencing_release('$resource', $first)");
	@r{qw(tokens first max)} = (\@tokens, $first, $max);
	return \%r;
}

# The extension's default version, from fencing.control.
sub default_version
{
	my $root = repo_root();
	open my $fh, '<', "$root/fencing.control" or die $!;
	while (<$fh>)
	{
		return $1 if /^default_version\s*=\s*'([^']+)'/;
	}
	die 'no default_version in fencing.control';
}

# The update chain from 1.0 to the default version, walking the update
# scripts that exist in sql/: ('1.0', '1.1', ...).
sub update_chain
{
	my $root = repo_root();
	my %next;
	for my $f (glob "$root/sql/fencing--*--*.sql")
	{
		$next{$1} = $2 if $f =~ m{/fencing--([^-]+)--([^-]+)\.sql$};
	}
	my @chain = ('1.0');
	my $target = default_version();
	while ($chain[-1] ne $target)
	{
		my $n = $next{ $chain[-1] } or die "no update script from $chain[-1] toward $target";
		push @chain, $n;
		die 'update scripts form a cycle' if @chain > 100;
	}
	return @chain;
}

1;
