# Takeover never ends a background worker that runs without a role for a
# non-superuser's fencing_acquire.
#
# A worker connected with BackgroundWorkerInitializeConnection(db, NULL, 0)
# runs as the bootstrap superuser and its PGPROC advertises no role (roleId
# invalid); pg_terminate_backend() treats it as a superuser's backend, and so
# does the takeover (MaySignal() in src/pg/api/takeover.cpp): only a
# superuser's acquire ends it. The worker (test/modules/takeover_worker,
# installed by test/t/run.sh) writes the resource-fenced table with the
# expired lease's token 1, which admits it at the resource's HWM (it holds the
# HWM lock in share mode, which the acquire's raise must wait for), then
# sleeps inside its transaction.
#   * the namespace owner (not a superuser) acquires with wait => '300 ms':
#     NULL within about its wait; the worker is not ended and its write
#     commits;
#   * a superuser acquires: the worker is ended (its write rolls back) and the
#     acquire gets token 2 within its wait.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

my $node = fresh_node('takeover_bgworker');
my $db = 'postgres';

is( query(
		$node, $db,
		q{SELECT count(*) FROM pg_available_extensions WHERE name = 'takeover_worker'}),
	'1',
	'the test module takeover_worker is installed (test/t/run.sh installs test/modules/*)')
  or BAIL_OUT('test/modules/takeover_worker is not installed in the server under test');

$node->safe_psql(
	$db, q{
	CREATE EXTENSION fencing;
	CREATE EXTENSION takeover_worker;
	CREATE ROLE regress_tw_owner LOGIN;
	CREATE TABLE tw_acct (id int PRIMARY KEY, res text NOT NULL, val int NOT NULL, fence fencing_token);
});
# The owner (not a superuser) claims namespace tw with the first lease: token
# 1, expired by the time the worker writes with it.
is( query(
		$node, $db,
		q{SET ROLE regress_tw_owner; SELECT fencing_acquire('r', 'w', '100 ms', namespace => 'tw')}),
	'1',
	'the namespace owner acquires token 1');
$node->safe_psql(
	$db, q{
	SELECT fencing_protect('tw_acct', scope => 'resource', resource_column => 'res',
	                       resource_namespace => 'tw');
	BEGIN;
	SET LOCAL fencing.token = 1;
	INSERT INTO tw_acct VALUES (1, 'r', 0);
	COMMIT;
});
$node->poll_query_until($db,
	q{SELECT expires_at < clock_timestamp() FROM fencing.lease WHERE namespace = 'tw'})
  or die 'the lease of token 1 did not expire';

# Starts the worker (token 1, pausing pause_ms inside its transaction after
# its write) and waits until it has written; returns its pid.
sub launch_worker
{
	my ($pause_ms) = @_;
	my $pid =
	  query($node, $db, "SELECT takeover_worker_launch('$db', 'tw_acct', 1, $pause_ms)");
	$node->poll_query_until($db,
		"SELECT query = 'takeover_worker: paused' FROM pg_stat_activity WHERE pid = $pid")
	  or die "the worker $pid did not write";
	return $pid;
}

sub alive
{
	my ($pid) = @_;
	return query($node, $db, "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid");
}

sub wait_gone
{
	my ($pid) = @_;
	$node->poll_query_until($db, "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid")
	  or die "the worker $pid did not exit";
}

# The acquire's result ('NULL' for NULL) and how long it took, in seconds.
sub acquire
{
	my ($role, $holder, $wait) = @_;
	my $set_role = $role ? "SET ROLE $role; " : '';
	my $row = query($node, $db,
		    $set_role
		  . "SELECT coalesce(fencing_acquire('r', '$holder', '1 min', wait => '$wait',"
		  . " namespace => 'tw')::text, 'NULL'),"
		  . " extract(epoch FROM clock_timestamp() - statement_timestamp())");
	return split /\|/, $row;
}

# A non-superuser's acquire.
my $pid = launch_worker(4000);
my ($token, $took) = acquire('regress_tw_owner', 's', '300 ms');
is($token, 'NULL', "a non-superuser's acquire does not take over from the role-less worker");
cmp_ok($took, '>=', 0.3, 'it waited its wait (300 ms) for the worker');
cmp_ok($took, '<', 1.5, 'and returned within about its wait');
is(alive($pid), '1', 'the worker was not ended');
is(query($node, $db, 'SELECT val FROM tw_acct'), '0', 'its write is still uncommitted');
wait_gone($pid);
is(query($node, $db, 'SELECT val FROM tw_acct'), '1', "the worker's write committed");
my $log = slurp_file($node->logfile);
unlike($log, qr/fencing: ending backend $pid\b/, 'no takeover of the worker was logged');
like($log, qr/takeover_worker: committed/, 'the worker logged its commit');

# A superuser's acquire ends it.
$pid = launch_worker(10000);
($token, $took) = acquire(undef, 'su', '5 s');
is($token, '2', "a superuser's acquire takes over from the role-less worker: token 2");
cmp_ok($took, '<', 5, 'within its wait');
# Not ended (a failure): end it here rather than wait out its pause.
query($node, $db, "SELECT pg_terminate_backend($pid)") if alive($pid);
wait_gone($pid);
$log = slurp_file($node->logfile);
like($log, qr/fencing: ending backend $pid\b/, 'the takeover of the worker was logged');
is(query($node, $db, 'SELECT val FROM tw_acct'), '1', "the ended worker's write rolled back");
is(query($node, $db, q{SELECT fencing_resource_high_water('r', 'tw')}), '2', 'the HWM is token 2');

$node->stop;
done_testing();
