# Helpers shared by the TAP suites in test/t (PostgreSQL::Test::Cluster).
package FencingTest;
use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(query sqlstate fresh_node crash_node repo_root update_chain default_version);

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
# crash recovery. The stale postmaster.pid stays: PostgreSQL must cope.
sub crash_node
{
	my ($node) = @_;
	my $pidfile = $node->data_dir . '/postmaster.pid';
	open my $fh, '<', $pidfile or die "no $pidfile: $!";
	my $pid = <$fh>;
	close $fh;
	chomp $pid;
	my @children = split /\s+/, `pgrep -P $pid`;
	kill 'KILL', $pid, grep { /^\d+$/ } @children;
	for (1 .. 200)
	{
		last unless kill 0, $pid;
		select undef, undef, undef, 0.05;
	}
	for (1 .. 200)
	{
		last unless grep { kill 0, $_ } grep { /^\d+$/ } @children;
		select undef, undef, undef, 0.05;
	}
	$node->{_pid} = undef;
	$node->start;
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
