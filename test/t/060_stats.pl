# The counters on a server with fencing in shared_preload_libraries
# (src/pg/base/stats.cpp): fencing_stats after accepted, stale and skipped writes
# (rejections rolled back are counted), the last rejection and who may see its
# key, the LOG lines and the documented pattern, counters across concurrent
# sessions, lease statistics, the monitoring queries with live counters, and
# the reset at restart. Run by test/t/run.sh.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $root = $ENV{FENCING_ROOT} // '.';
my $node = PostgreSQL::Test::Cluster->new('fencing_stats',
    $ENV{FENCING_TAP_PORT} ? (port => $ENV{FENCING_TAP_PORT}) : ());
$node->init;
$node->append_conf('postgresql.conf',
    "shared_preload_libraries = 'fencing'\nfencing.stats_max = 100\n");
$node->start;

sub sql { return $node->safe_psql('postgres', shift) }

sql(q{
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('SKU-001', 10, 33);
SELECT fencing_stats_reset();
});
is(sql('SELECT counters_enabled, hint IS NULL FROM fencing_stats_info'), 't|t',
    'preloaded: counters enabled, no hint');
my $user = sql('SELECT current_user');

# 3 accepted and 2 stale writes, each its own transaction; the stale ones
# fail with TF001 and their transactions roll back.
my ($ret, $pid, $err) = $node->psql('postgres', q{
SET application_name = 'tap-writer';
SELECT pg_backend_pid();
BEGIN; SET LOCAL fencing.token = 34; UPDATE inventory SET stock = 9 WHERE item = 'SKU-001'; COMMIT;
BEGIN; SET LOCAL fencing.token = 35; UPDATE inventory SET stock = 8 WHERE item = 'SKU-001'; COMMIT;
BEGIN; SET LOCAL fencing.token = 36; UPDATE inventory SET stock = 7 WHERE item = 'SKU-001'; COMMIT;
BEGIN; SET LOCAL fencing.token = 35; UPDATE inventory SET stock = 0 WHERE item = 'SKU-001'; COMMIT;
BEGIN; SET LOCAL fencing.token = 20; UPDATE inventory SET stock = 0 WHERE item = 'SKU-001'; COMMIT;
}, on_error_stop => 0);
my $refused = () = $err =~ /ERROR:  stale fencing token/g;
is($refused, 2, 'two stale writes refused with TF001');
is(sql(q{SELECT stock || ' ' || fence FROM inventory}), '7 36', 'the stale writes changed nothing');
is( sql(q{SELECT writes_checked || ' ' || writes_accepted || ' ' || writes_rejected || ' ' ||
               writes_skipped || ' ' || last_rejected_token || ' ' || last_rejection_hwm || ' ' ||
               last_rejected_key || ' ' || highest_hwm || ' ' || tokens_left
          FROM fencing_stats WHERE table_name = 'inventory'::regclass}),
    '5 3 2 0 20 36 key (item)=(SKU-001) 36 ' . (9223372036854775807 - 36),
    'fencing_stats: 3 accepted, 2 rejected (rolled back), the last rejection\'s tokens and key');

# The LOG lines, one per stale write, written before the error, parsed with
# the documented pattern (monitoring/fencing-log.regex).
my $pattern = slurp_file("$root/monitoring/fencing-log.regex");
chomp $pattern;
my $re = qr/$pattern/;
my @log = split /\n/, slurp_file($node->logfile);
my @lines = grep { /tap-writer/ && /fencing: stale write/ } @log;
is(scalar @lines, 2, 'one LOG line per stale write');
my @parsed = map { [ $_ =~ $re ] } @lines;
is_deeply(
    \@parsed,
    [
        [ 'rejected', 'public.inventory', '', 'key (item)=(SKU-001)', 35, 36, 'tap-writer', $user, $pid ],
        [ 'rejected', 'public.inventory', '', 'key (item)=(SKU-001)', 20, 36, 'tap-writer', $user, $pid ]
    ],
    'the LOG lines parse with the documented pattern: outcome, table, namespace, key, offered, hwm, application_name, user, pid');
my ($log_at) = grep { $log[$_] =~ /offered=35 / } 0 .. $#log;
my ($error_at) = grep { $log[$_] =~ /ERROR:  stale fencing token/ && $log[$_] =~ /tap-writer/ } 0 .. $#log;
ok(defined $log_at && defined $error_at && $log_at < $error_at, 'the LOG line comes before the error');

# Values are escaped: a key with a quote, a backslash and a newline stays on
# one line and parses back.
sql(q{INSERT INTO inventory VALUES (E'say "hi"\\\\\nbye', 1, 50)});
$node->psql('postgres', q{SET application_name = 'tap-odd';
BEGIN; SET LOCAL fencing.token = 40; UPDATE inventory SET stock = 0 WHERE fence = 50; COMMIT;});
my ($odd) = grep { /tap-odd/ && /fencing: stale write/ } split /\n/, slurp_file($node->logfile);
my @f = defined $odd ? ($odd =~ $re) : ();
(my $key = $f[3] // '') =~ s/\\(n|.)/$1 eq 'n' ? "\n" : $1/ge;
is($key, qq{key (item)=(say "hi"\\\nbye)}, 'an escaped key parses back to the DETAIL text');

# The key is shown only to roles that may SELECT the table; the counters to
# members of pg_read_all_stats.
sql(q{CREATE ROLE tap_monitor IN ROLE pg_read_all_stats;
    CREATE ROLE tap_reader; GRANT SELECT ON inventory TO tap_reader;});
is( sql(q{SET ROLE tap_monitor; SELECT writes_rejected || ' ' || (last_rejected_key IS NULL)
          FROM fencing_stats WHERE table_name = 'inventory'::regclass}),
    '3 true', 'pg_read_all_stats sees the counters but not the key');
is( sql(q{SET ROLE tap_reader; SELECT last_rejected_key FROM fencing_stats
         WHERE table_name = 'inventory'::regclass}),
    qq{key (item)=(say "hi"\\\nbye)}, 'a role with SELECT on the table sees the key');

# fencing.log_rejections = off: counted, not logged. on_stale => 'skip' and
# fenced_update(): skipped, logged as skipped.
$node->psql('postgres', q{SET application_name = 'tap-quiet'; SET fencing.log_rejections = off;
BEGIN; SET LOCAL fencing.token = 1; UPDATE inventory SET stock = 0 WHERE item = 'SKU-001'; COMMIT;});
is(scalar(grep { /tap-quiet/ && /fencing: stale write/ } split /\n/, slurp_file($node->logfile)),
    0, 'fencing.log_rejections = off: no LOG line');
is(sql(q{SET application_name = 'tap-skip';
       SELECT fenced_update('inventory', 2, '{"item": "SKU-001"}', '{"stock": 0}')}),
    '0', 'fenced_update() with a stale token: 0 rows');
my @skips = grep { /tap-skip/ && /fencing: stale write/ } split /\n/, slurp_file($node->logfile);
is(scalar(@skips) == 1 && ($skips[0] =~ $re)[0], 'skipped', 'a skipped write is logged as skipped');
is(sql(q{SELECT writes_rejected || ' ' || writes_skipped FROM fencing_stats
        WHERE table_name = 'inventory'::regclass}), '4 1', 'both counted');
is(sql(q{SET fencing.track_stats = off;
       BEGIN; SET LOCAL fencing.token = 99; UPDATE inventory SET stock = 1 WHERE item = 'SKU-001'; COMMIT;
       RESET fencing.track_stats;
       SELECT writes_accepted FROM fencing_stats WHERE table_name = 'inventory'::regclass}),
    '4', 'fencing.track_stats = off: not counted');

# Missing tokens (TF002) and resource scope: a write counts in the table's
# row and in its namespace's.
sql(q{CREATE TABLE needs (id int PRIMARY KEY, fence fencing_token);
      SELECT fencing_protect('needs', require_token => true);
      CREATE TABLE shards (id int PRIMARY KEY, shard text, fence fencing_token);
      SELECT fencing_protect('shards', scope => 'resource', resource_column => 'shard');
      INSERT INTO shards VALUES (1, 'x', 50);});
$node->psql('postgres', q{INSERT INTO needs VALUES (1, NULL);
UPDATE shards SET fence = 40 WHERE id = 1;}, on_error_stop => 0);
is(sql(q{SELECT writes_missing_token || ' ' || writes_checked FROM fencing_stats
          WHERE table_name = 'needs'::regclass}), '1 1', 'a write refused for a missing token is counted');

# fencing_allow_unfenced(): the rows it admits are counted as unfenced, and
# each call writes one LOG line with the table, the reason and the role.
$node->psql('postgres', q{SET application_name = 'tap-unfenced';
BEGIN;
SELECT fencing_allow_unfenced('needs', 'tap backfill "one"');
INSERT INTO needs VALUES (2, NULL), (3, NULL);
COMMIT;
INSERT INTO needs VALUES (4, NULL);});
is(sql(q{SELECT writes_unfenced || ' ' || writes_missing_token || ' ' || writes_checked FROM fencing_stats
          WHERE table_name = 'needs'::regclass}), '2 2 4',
    'fencing_allow_unfenced(): its 2 rows counted as unfenced; the write after COMMIT refused');
my @allowed = grep { /tap-unfenced/ && /fencing: unfenced writes allowed/ } split /\n/, slurp_file($node->logfile);
is(scalar(@allowed), 1, 'fencing_allow_unfenced(): one LOG line per call');
like($allowed[0] // '', qr/table="public\.needs" reason="tap backfill \\"one\\"" application_name="tap-unfenced" user="\Q$user\E" pid=\d+/,
    'fencing_allow_unfenced(): the LOG line names the table, the reason and the role');
is( sql(q{SELECT string_agg(kind || ':' || writes_accepted || ':' || writes_rejected || ':' ||
                            last_rejected_token || ':' || last_rejection_hwm || ':' || last_rejected_key, ' '
                            ORDER BY kind)
          FROM fencing_stats WHERE table_name = 'shards'::regclass OR namespace = 'default'}),
    "namespace:1:1:40:50:resource 'x' (namespace 'default') table:1:1:40:50:resource 'x' (namespace 'default')",
    'resource scope: counted for the table and for its namespace');

# Concurrent sessions: 4 clients x 25 transactions, each with one accepted
# write, one refused inside a subtransaction (rolled back) and one skipped.
sql(q{INSERT INTO inventory SELECT 'c' || g, 0, 1000 FROM generate_series(0, 3) g;
    INSERT INTO inventory VALUES ('s', 0, 1000);
    SELECT fencing_stats_reset();});
my $script = $node->basedir . '/mix.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{BEGIN;
SELECT set_config('fencing.token', '1000', true);
UPDATE inventory SET stock = stock + 1 WHERE item = 'c' || :client_id;
SELECT set_config('fencing.token', '1', true);
DO $$ BEGIN UPDATE inventory SET stock = 0 WHERE item = 's'; EXCEPTION WHEN sqlstate 'TF001' THEN NULL; END $$;
SELECT fenced_update('inventory', 2, '{"item": "s"}', '{"stock": 0}');
COMMIT;
});
$node->command_ok(
    [ 'pgbench', '-n', '-c', '4', '-j', '2', '-t', '25', '-f', $script, 'postgres' ],
    'pgbench: 4 concurrent sessions');
is( sql(q{SELECT writes_checked || ' ' || writes_accepted || ' ' || writes_rejected || ' ' ||
               writes_skipped FROM fencing_stats WHERE table_name = 'inventory'::regclass}),
    '300 100 100 100', 'concurrent sessions: every write counted once');
is(sql(q{SELECT sum(stock) FROM inventory WHERE item LIKE 'c_'}), '100', '100 accepted writes landed');

# Leases: a holder whose 1 s lease runs out while another waits for it.
my $first = sql(q{SELECT fencing_acquire('job', 'a', '1 second')});
my $second = sql(q{SELECT fencing_acquire('job', 'b', '1 minute', wait => '10 seconds')});
is(sql(qq{SELECT fencing_renew('job', $first, '1 minute')}), 'f', 'the first holder lost its lease');
is(sql(qq{SELECT fencing_release('job', $second)}), 't', 'the second holder releases');
is( sql(q{SELECT acquisitions || ' ' || contended_attempts || ' ' || renewals || ' ' || releases || ' ' ||
               expiries_detected || ' ' || current_token || ' ' || (wait_max_ms > 0) || ' ' ||
               (wait_total_ms = wait_max_ms) || ' ' || (hold_max_ms >= 0)
          FROM fencing_lease_stats WHERE resource = 'job'}),
    "2 1 0 1 1 $second true true true",
    'fencing_lease_stats: 2 acquisitions, 1 contended with its wait, 1 release, 1 expiry detected');
is(sql(q{SELECT fencing_acquire('job', 'c', '1 minute') IS NOT NULL}), 't', 'acquired again');
is(sql(q{SELECT kind || ':' || object FROM fencing_top LIMIT 2}), "table:inventory\nlease:default/job",
    'fencing_top: the table with stale writes first');

# The monitoring files, with counters.
{
    local $ENV{PGHOST} = $node->host;
    local $ENV{PGPORT} = $node->port;
    my $out = `/usr/bin/python3 $root/test/monitoring/check.py postgres --expect-rows 2>&1`;
    is($?, 0, 'monitoring queries run and return their declared metrics, with rows')
      or diag($out);
}

# Entries keep names truncated (63 bytes of namespace, 127 of resource): the
# views match them to the catalog's full names, so the owner of namespace
# 'NNN…' (63 bytes) sees nothing of a longer namespace beginning so, and the
# longer one's owner sees its rows under their full names.
my $n63 = 'N' x 63;
my $r127 = 'R' x 127;
sql(qq{CREATE ROLE tap_victim; CREATE ROLE tap_attacker;
    GRANT CREATE ON SCHEMA public TO tap_victim, tap_attacker;
    SET ROLE tap_victim;
    CREATE TABLE vt (id int PRIMARY KEY, res text, tok fencing_token);
    SELECT fencing_protect('vt', scope => 'resource', resource_column => 'res',
                           resource_namespace => '$n63-victim-secret');
    SELECT fencing_acquire('$r127-victim-secret', 'h', '1 hour', namespace => '$n63-victim-secret');
    INSERT INTO vt VALUES (1, 'secret', 100);
    RESET ROLE;
    SET ROLE tap_attacker;
    CREATE TABLE att (id int PRIMARY KEY, res text, tok fencing_token);
    SELECT fencing_protect('att', scope => 'resource', resource_column => 'res',
                           resource_namespace => '$n63');
    SELECT fencing_acquire('$r127', 'h', '1 hour', namespace => '$n63');});
$node->psql('postgres', q{SET ROLE tap_victim; UPDATE vt SET tok = 50;});
is( sql(q{SET ROLE tap_attacker;
          SELECT string_agg(kind || ':' || COALESCE(table_name::text, namespace) || ':' ||
                            writes_checked || ':' || COALESCE(highest_hwm::text, '-'), ' ' ORDER BY kind)
            FROM fencing_stats}),
    "namespace:$n63:0:1 table:att:0:-",
    'a truncated entry is not shown to the owner of the namespace its truncated name spells');
is( sql(q{SET ROLE tap_attacker;
          SELECT string_agg(length(resource) || ':' || acquisitions, ' ') FROM fencing_lease_stats}),
    '127:1', 'nor its lease resources');
is(sql(q{SET ROLE tap_attacker; SELECT count(*) FROM fencing_top}), '0', 'nor in fencing_top');
is( sql(q{SET ROLE tap_victim;
          SELECT string_agg(kind || ':' || COALESCE(table_name::text, namespace) || ':' ||
                            writes_checked || ':' || writes_rejected, ' ' ORDER BY kind)
            FROM fencing_stats}),
    "namespace:$n63-victim-secret:2:1 table:vt:2:1",
    'the long namespace\'s owner sees its counters under the full name');
is( sql(q{SET ROLE tap_victim;
          SELECT string_agg(resource || ':' || acquisitions || ':' || holder, ' ') FROM fencing_lease_stats}),
    "$r127-victim-secret:1:h", 'and its lease resource, once, with its counters');

# Line breaks outside ASCII (U+2028, U+0085 NEL) are escaped: a reader
# splitting lines the Unicode way still sees the whole line.
sql(q{INSERT INTO inventory VALUES (E'u\u2028v\u0085w', 1, 60)});
$node->psql('postgres', q{SET application_name = 'tap-unicode';
BEGIN; SET LOCAL fencing.token = 41; UPDATE inventory SET stock = 0 WHERE fence = 60; COMMIT;});
my ($uni) = grep { /tap-unicode/ && /fencing: stale write/ } split /\n/, slurp_file($node->logfile);
ok(defined $uni && $uni !~ /\xe2\x80\xa8|\xc2\x85/, 'no raw U+2028 or NEL in the LOG line');
is(defined $uni ? ($uni =~ $re)[3] : undef, 'key (item)=(u\u2028v\u0085w)',
    'they are written \uNNNN and the line parses');

# A long value is cut at 1024 bytes (then "..."): a resource may be as long as
# a text, and its escaped copy must not overflow the line's buffer.
sql(q{INSERT INTO shards VALUES (2, repeat(E'\\x01', 100000), 70)});
$node->psql('postgres', q{SET application_name = 'tap-long';
BEGIN; SET LOCAL fencing.token = 41; UPDATE shards SET fence = 41 WHERE id = 2; COMMIT;});
my ($long) = grep { /tap-long/ && /fencing: stale write/ } split /\n/, slurp_file($node->logfile);
my $long_key = defined $long ? ($long =~ $re)[3] : undef;
ok(defined $long_key && length($long_key) < 4 * 1024 + 100 && $long_key =~ /\\x01\.\.\.$/,
    'a long key is cut and marked in the LOG line, which still parses');

# When every entry is in use (fencing.stats_max = 100), any role can fill
# them (a lease per resource name). Counting does not stop: making a new entry
# evicts the least recently used ones, and the evictions are counted. A table
# counted all along keeps its entry; one not counted since the fill began
# loses its entry, and the views say so (NULL, a hint) rather than 0.
sql(q{CREATE TABLE hot (id int PRIMARY KEY, fence fencing_token); INSERT INTO hot VALUES (1, 10);
      CREATE TABLE cold (id int PRIMARY KEY, fence fencing_token); INSERT INTO cold VALUES (1, 10);});
$node->psql('postgres', q{UPDATE cold SET fence = 5});
is(sql(q{SELECT writes_rejected || ' ' || evicted FROM fencing_stats, fencing_stats_info
         WHERE table_name = 'cold'::regclass}), '1 0', 'before the fill: counted, nothing evicted');
for my $round (1 .. 6)
{
	$node->psql('postgres', q{UPDATE hot SET fence = 5});
	my $from = $round * 20 - 19;
	sql(qq{SET ROLE tap_attacker;
	       SELECT count(fencing_acquire('fill' || g, 'x', '1 second', namespace => 'tap_fill'))
	         FROM generate_series($from, $from + 19) g;});
}
my ($entries, $evicted, $untracked) = split /\|/,
  sql(q{SELECT entries, evicted, untracked_events FROM fencing_stats_info});
cmp_ok($evicted, '>=', 20, "120 new lease resources in 100 entries: $evicted evicted");
cmp_ok($entries, '<=', 100, "entries stay within fencing.stats_max ($entries)");
is($untracked, '0', 'no event went uncounted');
is(sql(q{SELECT writes_rejected FROM fencing_stats WHERE table_name = 'hot'::regclass}), '6',
    'the table counted between the fills kept its entry: every rejection counted');
is( sql(q{SELECT COALESCE(writes_rejected::text, 'NULL') || ' ' || hint
            FROM fencing_stats WHERE table_name = 'cold'::regclass}),
    'NULL not counted since an eviction: all fencing.stats_max entries were in use and the least recently used were evicted (see fencing_stats_info.evicted)',
    'the least recently used table was evicted: NULL counters and a hint, not 0');
sql(q{CREATE TABLE late (id int PRIMARY KEY, fence fencing_token); INSERT INTO late VALUES (1, 10)});
$node->psql('postgres', q{UPDATE late SET fence = 5});
$node->psql('postgres', q{UPDATE cold SET fence = 5});
is(sql(q{SELECT string_agg(writes_rejected::text, ' ' ORDER BY table_name::text) FROM fencing_stats
         WHERE table_name IN ('late'::regclass, 'cold'::regclass)}), '1 1',
    'a table created on a full table is counted, and an evicted one counts again');
is(sql(q{SELECT count(*) FROM fencing_lease_stats WHERE namespace = 'tap_fill' AND acquisitions IS NULL}),
    sql(q{SELECT 120 - count(*) FROM fencing_lease_stats WHERE namespace = 'tap_fill' AND acquisitions = 1}),
    'lease resources without an entry: NULL');
my ($full_alert) = slurp_file("$root/monitoring/fencing_alerts.sql") =~ /^-- name: counters_full\n(.*?)\n\n/ms;
like(sql($full_alert // 'SELECT 0'), qr/^\d+\|100\|0\|[1-9]/, 'the counters_full alert fires');
sql(q{SELECT fencing_stats_reset()});
is(sql(q{SELECT evicted FROM fencing_stats_info}), '0', 'fencing_stats_reset() zeroes the evictions');

# Restart: the counters start again from zero (the lease itself is kept).
my $reset_before = sql('SELECT stats_reset FROM fencing_stats_info');
$node->restart;
is( sql(q{SELECT writes_checked || ' ' || writes_rejected || ' ' || (last_rejection_at IS NULL)
          FROM fencing_stats WHERE table_name = 'inventory'::regclass}),
    '0 0 true', 'after a restart the counters are zero');
is(sql(q{SELECT acquisitions || ' ' || (current_token IS NOT NULL) FROM fencing_lease_stats
        WHERE resource = 'job'}), '0 true', 'lease counters zero, the current token kept');
is(sql(qq{SELECT stats_reset > '$reset_before' FROM fencing_stats_info}), 't',
    'stats_reset moved to the restart');

# Entries outlive DROP EXTENSION; lease rows do not. A role claiming the
# namespace name in the new installation sees none of the old resources.
sql(q{SELECT fencing_acquire('old-' || g, 'x', '1 second', namespace => 'tap_reclaim')
        FROM generate_series(1, 3) g;});
sql(q{DROP EXTENSION fencing CASCADE; CREATE EXTENSION fencing;
      SET ROLE tap_attacker; SELECT fencing_acquire('new', 'x', '1 second', namespace => 'tap_reclaim');});
is(sql(q{SET ROLE tap_attacker; SELECT string_agg(resource, ' ') FROM fencing_lease_stats}), 'new',
    'after DROP/CREATE EXTENSION the new owner of a namespace name sees only its own resources');
is(sql(q{SELECT count(*) FROM fencing_lease_stats WHERE namespace = 'tap_reclaim'}), '4',
    'a superuser still sees the old entries');

$node->stop;
done_testing();
