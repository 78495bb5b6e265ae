# The retirement worker (src/pg/worker/retire_worker.cpp) on a server with
# fencing in shared_preload_libraries: an automatic retirement policy is run
# without anyone calling fencing_retire(); a stale completion of a retired job
# is refused and a new job's lease is issued above the floor; databases
# without the extension or with an older version are skipped with one LOG
# line; the worker comes back after a server restart and after a kill -9 of
# itself, and leaves cleanly on SIGTERM. Run by test/t/run.sh.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use FencingTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = fresh_node('retire_worker',
    conf => "shared_preload_libraries = 'fencing'\n"
      . "fencing.retire_databases = 'postgres, plain, old'\n"
      . "fencing.retire_naptime = 1\n"
      . "fencing.retire_worker_batch = 3\n"
      # The framework switches it off; a crashed worker must be restarted.
      . "restart_after_crash = on\n");

sub sql { return query($node, 'postgres', shift) }

sub worker_pid
{
	return sql(q{SELECT pid FROM pg_stat_activity
	             WHERE backend_type = 'fencing retire worker' AND datname = 'postgres'});
}

# The cookbook's job queue, retirement switched on for its namespace with an
# automatic policy (idle for more than 1 s).
sql(q{
CREATE DATABASE plain;
CREATE DATABASE old;
CREATE EXTENSION fencing;
CREATE TABLE jobs (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'queued',
                   fence fencing_token);
SELECT fencing_protect('jobs', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'jobs', require_token => false);
SELECT fencing_enable_retirement('jobs', idle => '1 s');
});
query($node, 'old', q{CREATE EXTENSION fencing VERSION '1.4'});

# Ten jobs, each claimed, completed, released and removed. Job 1 is claimed
# twice: worker-1's lease expires and worker-2 takes the job over.
my $stale = sql(q{
INSERT INTO jobs (id) SELECT g FROM generate_series(1, 10) g;
SELECT fencing_acquire('1', 'worker-1', '1 ms', namespace => 'jobs');
});
sleep 1;
my $done = sql(q{
SELECT fencing_acquire('1', 'worker-2', '1 min', namespace => 'jobs');
});
sql(qq{
SELECT fenced_update('jobs', $done, '{"id": 1}', '{"status": "done"}');
SELECT fencing_release('1', $done, namespace => 'jobs');
DO \$\$
DECLARE t fencing_token;
BEGIN
    FOR g IN 2 .. 10 LOOP
        t := fencing_acquire(g::text, 'w', '1 min', namespace => 'jobs');
        PERFORM fenced_update('jobs', t, jsonb_build_object('id', g), '{"status": "done"}');
        PERFORM fencing_release(g::text, t, namespace => 'jobs');
    END LOOP;
END \$\$;
DELETE FROM jobs;
});
is(sql(q{SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'jobs'}), '10',
    'ten jobs leave ten resource HWMs');

# Nobody calls fencing_retire(): the worker does, in batches of 3.
ok($node->poll_query_until('postgres', q{
SELECT (SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'jobs') = 0
   AND (SELECT count(*) FROM fencing.lease WHERE namespace = 'jobs') = 0}),
    'the worker retires every idle HWM and lease row of the namespace');
my ($floor, $retired) = split /\|/, sql(q{SELECT floor, retired FROM fencing.resource_floor
                                         WHERE namespace = 'jobs'});
cmp_ok($floor, '>=', $done, 'the floor is at least the highest token folded into it');
cmp_ok($retired, '>=', 20, 'resource_floor counts what was retired');
is( sql(q{SELECT retirement_enabled || ' ' || retirement_idle || ' ' || floor || ' ' || retired || ' '
               || (last_retired_at IS NOT NULL) || ' ' || (highest_hwm >= floor)
          FROM fencing_stats WHERE kind = 'namespace' AND namespace = 'jobs'}),
    "true 00:00:01 $floor $retired true true",
    'fencing_stats shows the namespace\'s policy, floor and how much was retired');

# worker-1 wakes up: its completion of job 1, which has no entry of its own
# any more, is judged by the floor and refused.
sql(q{INSERT INTO jobs (id) VALUES (1)});
is(sql(qq{SELECT fenced_update('jobs', $stale, '{"id": 1}', '{"status": "stale"}')}), '0',
    'a stale completion of a retired job is refused');
is(sqlstate($node, 'postgres',
        qq{BEGIN; SET LOCAL fencing.token = $stale; UPDATE jobs SET status = 'stale' WHERE id = 1; COMMIT;}),
    'TF001', 'the same completion in plain SQL fails with TF001');
my $next = sql(q{SELECT fencing_acquire('1', 'worker-3', '1 min', namespace => 'jobs')});
cmp_ok($next, '>', $floor, 'a new lease on the retired job is issued above the floor');

# Skipped databases: one LOG line each, however many rounds pass. (Their
# workers started before the databases existed, failed, and are restarted
# 10 s later.)
sub skip_lines
{
	my $log = slurp_file($node->logfile);
	my $plain = () = $log =~ /skipping database "plain": extension fencing is not installed/g;
	my $old = () = $log =~ /skipping database "old": extension fencing is at version 1\.4/g;
	return ($plain, $old);
}
for (1 .. 300)
{
	my ($p, $o) = skip_lines();
	last if $p && $o;
	select undef, undef, undef, 0.1;
}
sleep 3;
my ($plain, $old) = skip_lines();
is("$plain $old", '1 1', 'a database without the extension, and one at 1.4, are skipped with one LOG line each');

# Retire again after a restart, and after a kill -9 of the worker itself.
sub churn_and_wait
{
	my ($first, $label) = @_;
	sql(qq{
SELECT fencing_release(g::text, fencing_acquire(g::text, 'w', '1 min', namespace => 'jobs'),
                       namespace => 'jobs')
  FROM generate_series($first, $first + 4) g;});
	ok($node->poll_query_until('postgres', qq{
SELECT count(*) = 0 FROM fencing.resource_hwm
 WHERE namespace = 'jobs' AND resource::int8 BETWEEN $first AND $first + 4}), $label);
}
# The worker runs as a superuser: a function another role creates in the
# extension's schema, an overload of fencing_retire_due that SQL name
# resolution would prefer to the extension's, must never run in its place.
sql(q{
CREATE ROLE mallory LOGIN;
GRANT CREATE ON SCHEMA public TO mallory;
CREATE TABLE public.mallory_calls (at timestamptz DEFAULT now());
GRANT INSERT ON public.mallory_calls TO mallory;
SET ROLE mallory;
CREATE FUNCTION public.fencing_retire_due(max_entries integer) RETURNS bigint
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.mallory_calls DEFAULT VALUES;
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE mallory SUPERUSER';
    END IF;
    RETURN 0;
END $$;
RESET ROLE;
});
churn_and_wait(50, 'the worker retires with an overload of fencing_retire_due in its schema');
is(sql(q{SELECT rolsuper::text || ' ' || (SELECT count(*) FROM public.mallory_calls)
           FROM pg_roles WHERE rolname = 'mallory'}),
    'false 0', 'the overload never ran: its owner gained nothing');

$node->restart;
churn_and_wait(100, 'after a restart the worker retires again');

my $pid = worker_pid();
ok($pid, 'the worker runs');
kill 'KILL', $pid;
ok($node->poll_query_until('postgres', qq{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'fencing retire worker' AND datname = 'postgres' AND pid <> $pid}),
    'after a kill -9 the worker is started again');
churn_and_wait(200, 'after a kill -9 the worker retires again');

# SIGTERM (a fast shutdown): the worker leaves as a backend does, no crash.
my $offset = -s $node->logfile;
$node->stop('fast');
my $tail = substr(slurp_file($node->logfile), $offset);
like($tail, qr/terminating background worker "fencing retire worker" due to administrator command/,
    'SIGTERM ends the worker');
unlike($tail, qr/terminated by signal|exited with exit code [2-9]/, 'and nothing crashed on the way out');

done_testing();
