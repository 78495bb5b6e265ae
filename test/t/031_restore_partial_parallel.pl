# Restores that are not a whole-database restore into an empty database.
#  * pg_restore -j 4 of partitioned fenced tables (row and table scope),
#    with and without session_replication_role = replica: 10 runs each;
#    in replica mode (the documented way) no deadlock (parallel ADD
#    CONSTRAINT / CREATE TRIGGER jobs of one partition tree used to deadlock
#    in the extension's event and guard triggers), exit code 0, every policy
#    and guard in place.
#  * Partial dumps (pg_dump -t, -n public restored with --clean, -N fencing),
#    restored in replica mode as docs/operations.md advises for data, into a
#    database that has the extension: the table comes back fenced under its
#    policy, never silently unfenced; since the dump carries none of its
#    state (a deleted key's tombstone), every write is refused (TF004) until
#    the owner's fencing_reset_restored(); then it is judged by its rows'
#    tokens.
#  * fencing_verify_guards() reports a table with a fencing_token column and
#    no policy.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

my $node = fresh_node('restore_partial', conf => "max_connections = 40\n");
my $work = PostgreSQL::Test::Utils::tempdir('restore_partial');
my $runs = $ENV{FENCING_TAP_RESTORE_RUNS} // 10;

sub run_client
{
	my ($replica, @cmd) = @_;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGOPTIONS} = $replica ? '-c session_replication_role=replica' : '';
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err, IPC::Run::timeout(180));
	return ($? >> 8, $err);
}

sub fresh_db
{
	my ($db, $ext) = @_;
	$node->safe_psql('postgres', "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db");
	query($node, $db, 'CREATE EXTENSION fencing') if $ext;
	return $db;
}

# --- pg_restore -j 4 of partitioned fenced tables -----------------------------
my $src = fresh_db('parallel_src', 1);
$node->safe_psql($src, <<'SQL');
CREATE TABLE ev (id int, region text, v int, fence fencing_token,
                 PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE ev_eu PARTITION OF ev FOR VALUES IN ('eu');
CREATE TABLE ev_us PARTITION OF ev FOR VALUES IN ('us');
CREATE TABLE ev_ap PARTITION OF ev FOR VALUES IN ('ap');
CREATE TABLE ev_sa PARTITION OF ev FOR VALUES IN ('sa');
CREATE TABLE ev_af PARTITION OF ev FOR VALUES IN ('af');
CREATE TABLE ev_oc PARTITION OF ev FOR VALUES IN ('oc');
BEGIN; SET LOCAL fencing.token = 10;
INSERT INTO ev SELECT g, r, 0 FROM generate_series(1, 50) g,
       unnest(ARRAY['eu', 'us', 'ap', 'sa', 'af', 'oc']) r;
COMMIT;
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM ev WHERE id = 1 AND region = 'eu'; COMMIT;
CREATE TABLE led (id int, part int, fence fencing_token, PRIMARY KEY (id, part))
    PARTITION BY RANGE (part);
CREATE TABLE led_1 PARTITION OF led FOR VALUES FROM (0) TO (10);
CREATE TABLE led_2 PARTITION OF led FOR VALUES FROM (10) TO (20);
CREATE TABLE led_3 PARTITION OF led FOR VALUES FROM (20) TO (30);
SELECT fencing_protect('led', scope => 'table');
BEGIN; SET LOCAL fencing.token = 30; INSERT INTO led SELECT g, g FROM generate_series(0, 29) g; COMMIT;
SELECT fencing_advance('led', 50);
SQL
my ($rc, $err) = run_client(0, 'pg_dump', '-Fc', '-d', $src, '-f', "$work/parallel.dump");
is($rc, 0, 'pg_dump -Fc of partitioned fenced tables') or diag($err);

for my $replica (0, 1)
{
	my $mode = $replica ? 'replica mode' : 'origin mode';
	my ($deadlocks, $failed, $unfenced) = (0, 0, 0);
	for my $run (1 .. $runs)
	{
		my $db = fresh_db('parallel_dst', 0);
		my ($code, $stderr) = run_client($replica, 'pg_restore', '-j', '4', '-d', $db, "$work/parallel.dump");
		my $n = () = $stderr =~ /deadlock detected/g;
		$deadlocks += $n;
		if ($code != 0) { $failed++; diag("$mode run $run: exit $code\n$stderr"); }
		my $state = query($node, $db, q{
			SELECT (SELECT string_agg(table_name || ':' || scope || ':' || guard_ok::int, ' ' ORDER BY table_name::text)
			          FROM fencing_protected)
			       || ' pk=' || (SELECT count(*) FROM pg_constraint
			                      WHERE contype = 'p' AND conrelid::regclass::text ~ '^(ev|led)')
			       || ' hwm=' || fencing_high_water('led')
			       || ' tomb=' || fencing_high_water('ev', '{"id": 1, "region": "eu"}')});
		$unfenced++ unless $state eq 'ev:row:1 led:table:1 pk=11 hwm=50 tomb=20';
		diag("$mode run $run: $state") unless $state eq 'ev:row:1 led:table:1 pk=11 hwm=50 tomb=20';
	}
	# Without replica mode the guards fire on the restored rows and may
	# write a table HWM before fencing.table_hwm's own data arrives (a
	# duplicate key, or a deadlock with the job loading fencing.protected:
	# exit 1, loud); docs/operations.md says to restore in replica mode,
	# checked whole here. The deadlock between DDL on the parent and a
	# partition's load is restore_parent_ddl_deadlock.spec.
	diag("$mode: $deadlocks deadlock(s) in $runs runs") unless $replica;
	next unless $replica;
	is($deadlocks, 0, "pg_restore -j 4, $mode, $runs runs: no deadlock");
	is($failed, 0, "pg_restore -j 4, $mode, $runs runs: every run exits 0");
	is($unfenced, 0, "pg_restore -j 4, $mode, $runs runs: policies, guards, keys and HWMs restored");
}

# --- partial dumps restored in replica mode -------------------------------------
my $psrc = fresh_db('partial_src', 1);
$node->safe_psql($psrc, <<'SQL');
CREATE TABLE inv (id int PRIMARY KEY, stock int, fence fencing_token);
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO inv VALUES (1, 10), (2, 10); COMMIT;
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM inv WHERE id = 2; UPDATE inv SET stock = 9 WHERE id = 1; COMMIT;
SQL
for my $form (['-t', 'inv'], ['-n', 'public'], ['-N', 'fencing'])
{
	my $label = "pg_dump @$form";
	my $db = fresh_db('partial_dst', 1);
	($rc, $err) = run_client(0, 'pg_dump', '-Fc', @$form, '-d', $psrc, '-f', "$work/partial.dump");
	is($rc, 0, "$label: dumped") or diag($err);
	my @clean = $form->[1] eq 'public' ? ('--clean', '--if-exists') : ();
	($rc, $err) = run_client(1, 'pg_restore', @clean, '-d', $db, "$work/partial.dump");
	is(query($node, $db, q{SELECT string_agg(table_name || ':' || scope || ':' || guard_ok::int, ' ') FROM fencing_protected}),
		'inv:row:0', "$label, replica-mode restore: the table comes back fenced, marked restored without its state");
	like(query($node, $db, 'SELECT problem FROM fencing_verify_guards()'), qr/restored without its fencing state/,
		"$label: fencing_verify_guards() reports it");
	is(sqlstate($node, $db, 'BEGIN; SET LOCAL fencing.token = 100; UPDATE inv SET stock = -1 WHERE id = 1; COMMIT'),
		'TF004', "$label: a write with a fresh token is refused until the reset");
	is(sqlstate($node, $db, 'BEGIN; SET LOCAL fencing.token = 15; INSERT INTO inv VALUES (2, -1); COMMIT'),
		'TF004', "$label: the deleted key's stale re-insert is refused until the reset");
	is(query($node, $db, q{SELECT fencing_reset_restored('inv')}), 't', "$label: the owner accepts the loss");
	is(query($node, $db, 'SELECT count(*) FROM fencing_verify_guards()'), '0', "$label: fencing_verify_guards() then finds nothing wrong");
	is(sqlstate($node, $db, 'UPDATE inv SET stock = -1 WHERE id = 1'), 'TF002', "$label: a write without a token is refused");
	is(sqlstate($node, $db, 'BEGIN; SET LOCAL fencing.token = 15; UPDATE inv SET stock = -2 WHERE id = 1; COMMIT'),
		'TF001', "$label: a token below the row's is refused");
	# What the reset accepted: the dump did not hold fencing's state, so a key
	# deleted before the dump has no tombstone in the restored table.
	is(query($node, $db, q{SELECT coalesce(fencing_high_water('inv', '{"id": 2}')::text, 'none')}),
		'none', "$label: the deleted key's tombstone was not in the partial dump (documented)");
}

# --- fencing_verify_guards() reports a token column without a policy -----------
my $vdb = fresh_db('verify_dst', 1);
$node->safe_psql($vdb, <<'SQL');
SET fencing.auto_protect = off;
CREATE TABLE bare (id int PRIMARY KEY, fence fencing_token);
SQL
is(query($node, $vdb, q{SELECT table_name || ': ' || problem FROM fencing_verify_guards()}),
	'bare: fencing_token column fence not fenced: the table has no fencing policy (fencing_protect() fences it)',
	'fencing_verify_guards() reports a table whose fencing_token column is not fenced');

done_testing();
