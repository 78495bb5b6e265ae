# Retirement without preloading fencing: the cookbook's pg_cron recipe
# (docs/cookbook.md, "Retirement from pg_cron") on a server whose
# shared_preload_libraries holds pg_cron only. pg_cron runs the
# schema-qualified public.fencing_retire_due() every minute as the role that
# owns the policy, not as a superuser; the idle entries of a namespace with an
# automatic policy are retired without anyone calling it, and a stale write to
# a retired key is refused afterwards. Needs postgresql-15-cron
# (test/install-deps.sh); waits up to two minutes for the first run.
# Run by test/t/run.sh.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use FencingTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $libdir = `$ENV{PG_CONFIG} --pkglibdir` if $ENV{PG_CONFIG};
$libdir //= `pg_config --pkglibdir`;
chomp $libdir;
BAIL_OUT("pg_cron is not installed in $libdir (apt-get install postgresql-15-cron)")
  unless -e "$libdir/pg_cron.so";

my $node = PostgreSQL::Test::Cluster->new('retire_cron');
$node->init;
# pg_cron connects to the database it runs a job in: over the node's socket.
$node->append_conf('postgresql.conf',
    "shared_preload_libraries = 'pg_cron'\n"
      . "cron.database_name = 'postgres'\n"
      . "cron.host = '" . $node->host . "'\n");
$node->start;

sub sql { return query($node, 'postgres', shift) }

is(sql(q{SHOW shared_preload_libraries}), 'pg_cron', 'fencing is not preloaded');
sql(q{
CREATE EXTENSION fencing;
CREATE EXTENSION pg_cron;
CREATE ROLE app_owner LOGIN;
CREATE SCHEMA app AUTHORIZATION app_owner;
SET ROLE app_owner;
SET search_path = app, public;
CREATE TABLE jobs (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'queued',
                   fence fencing_token);
SELECT fencing_protect('jobs', scope => 'resource', resource_column => 'id',
                       resource_namespace => 'jobs', require_token => false);
SELECT fencing_enable_retirement('jobs', idle => '1 s');
INSERT INTO jobs (id) SELECT g FROM generate_series(1, 5) g;
});
is(sql(q{SELECT owner FROM fencing.resource_namespace WHERE name = 'jobs'}),
    'app_owner', 'the namespace and its policy belong to app_owner');
# Job 1's first worker stalls past its lease; the job is claimed again below.
my $stale = sql(q{SELECT fencing_acquire('1', 'stalled', '1 ms', namespace => 'jobs')});
sleep 1;
my $tokens = sql(q{
SELECT string_agg(t::text, ' ' ORDER BY g) FROM (
    SELECT g, fencing_acquire(g::text, 'w', '1 min', namespace => 'jobs') AS t
      FROM generate_series(1, 5) g) s});
my @tokens = split / /, $tokens;
sql(q{
SELECT fenced_update('app.jobs', l.token, jsonb_build_object('id', l.resource::int8), '{"status": "done"}'),
       fencing_release(l.resource, l.token, namespace => 'jobs')
  FROM fencing.lease l WHERE l.namespace = 'jobs';
});
is(sql(q{SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'jobs'}), '5',
    'five finished jobs leave five HWMs');

# The recipe, as the cookbook gives it: the job runs as the policy's owner.
sql(q{SELECT cron.schedule_in_database('fencing-retire', '* * * * *',
        'SELECT public.fencing_retire_due()', 'postgres', 'app_owner')});
is(sql(q{SELECT username FROM cron.job WHERE jobname = 'fencing-retire'}), 'app_owner',
    'the job runs as app_owner, not as a superuser');
my $waited = time;
ok($node->poll_query_until('postgres', q{
SELECT (SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'jobs') = 0
   AND (SELECT count(*) FROM fencing.lease WHERE namespace = 'jobs') = 0}),
    'pg_cron retires the idle HWMs and lease rows');
note('first run after ' . (time - $waited) . ' s');
is(sql(q{SELECT status FROM cron.job_run_details ORDER BY runid LIMIT 1}), 'succeeded',
    'the job ran and succeeded');
is(sql(q{SELECT retired >= 10 FROM fencing.resource_floor WHERE namespace = 'jobs'}), 't',
    'the floor counts what was retired');
cmp_ok($tokens[0], '>', $stale, "job 1 was claimed again with a newer token");
is(sql(qq{SELECT fenced_update('app.jobs', $stale, '{"id": 1}', '{"status": "stale"}')}), '0',
    "the stalled worker's completion of retired job 1 is refused by the floor");
$node->stop;
done_testing();
