# Helpers shared by the TAP suites in test/t (PostgreSQL::Test::Cluster).
package FencingTest;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Utils;
use Test::More;
use POSIX ();

our @EXPORT = qw(query sqlstate sqlstates fresh_node crash_node become_subreaper repo_root update_chain default_version);

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
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%params);
	$node->append_conf('postgresql.conf', "fsync = on\n$conf");
	$node->start;
	return $node;
}

# crash_node(NODE): SIGKILL of the postmaster and every child at once (no
# shutdown checkpoint, no clean exit of any backend), then a restart through
# crash recovery. The postmaster is stopped (SIGSTOP) first so that it forks
# nothing between the listing of its children and the kill. The stale
# postmaster.pid stays (PostgreSQL must cope) unless the dead postmaster is
# still an unreaped zombie.
sub crash_node
{
	my ($node) = @_;
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
	$node->start;
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
# a container may reap late or never. prctl(PR_SET_CHILD_SUBREAPER), Linux
# x86_64 (syscall 157); elsewhere crash_node waits for another reaper.
sub become_subreaper
{
	no warnings;
	syscall(157, 36, 1, 0, 0, 0) if $^O eq 'linux';
	return;
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
