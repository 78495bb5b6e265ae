# An acknowledged fencing_renew survives kill -9.
#
# The client libraries compute a lease's safe time from the send time of the
# last renewal they saw succeed (plus TTL minus a margin) and signal the lease
# lost when it runs out, before the server's expiry. That holds only if an
# acknowledged renewal is durable: a renewal lost in a crash brings back the
# previous expiry, which is earlier than the client's deadline, and another
# holder can then acquire a newer token while the first one's lease still
# reports itself live. So a renewal (and a re-acquire, which extends the lease
# the same way) commits durably, whatever synchronous_commit says; a release
# may still commit cheaply (losing one only keeps a lease until its expiry).
#
# The WAL writer sleeps 10 s so that an asynchronous commit stays unflushed
# until the crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

become_subreaper();
my $node = fresh_node('renew_durable',
	conf => "wal_writer_delay = 10s\nautovacuum = off\ncheckpoint_timeout = 1h\n");
my $db = 'postgres';
$node->safe_psql($db, 'CREATE EXTENSION fencing');

my $expiry = q{SELECT expires_at FROM fencing.lease WHERE resource OPERATOR(pg_catalog.=) 'r'};
my $token = query($node, $db, q{SELECT fencing_acquire('r', 'a', '1 hour')});

for my $mode ('on', 'off')
{
	my $before = query($node, $db, $expiry);
	is( query(
			$node, $db,
			"SET synchronous_commit = $mode; SELECT fencing_renew('r', $token, '2 hours')"),
		't',
		"renew acknowledged (synchronous_commit = $mode)");
	my $renewed = query($node, $db, $expiry);
	isnt($renewed, $before, 'the renewal moved the expiry');
	crash_node($node);
	is(query($node, $db, $expiry), $renewed,
		"the acknowledged renewal (synchronous_commit = $mode) survived kill -9");
}

# A re-acquire by the live holder extends the lease as a renewal does.
my $before = query($node, $db, $expiry);
is(query($node, $db, q{SET synchronous_commit = off; SELECT fencing_acquire('r', 'a', '3 hours')}),
	$token, 're-acquire returns the live token');
my $extended = query($node, $db, $expiry);
isnt($extended, $before, 'the re-acquire moved the expiry');
crash_node($node);
is(query($node, $db, $expiry), $extended, 'the acknowledged re-acquire survived kill -9');

$node->stop;
done_testing();
