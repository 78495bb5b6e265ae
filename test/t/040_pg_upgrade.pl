# pg_upgrade keeps every guard: state in every scope on an old cluster
# (row scope with tombstones, resource scope in a namespace on a column after
# a dropped one, table scope, partitions, a live lease, floors), pg_upgrade --link
# into a new cluster, then every guard is present and current, the state is
# there and stale writes are refused in every scope.
#   FENCING_UPGRADE_FROM  the install prefix of an older PostgreSQL to upgrade
#                         from (the version matrix: a source-built 15 -> 18);
#                         by default the old cluster runs the same installation
#                         as the new one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Spec;
use FencingTest;

my $db = 'fenced';
my $from = $ENV{FENCING_UPGRADE_FROM};
# Data checksums on both sides: 18's initdb enables them by default, 15's
# does not, and pg_upgrade needs the two clusters to agree.
my $old = fresh_node('old', extra => ['--data-checksums'], $from ? (install_path => $from) : ());
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init(extra => ['--data-checksums']);
$new->append_conf('postgresql.conf', "fsync = on\n");

query($old, 'postgres', "CREATE DATABASE $db");
$old->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10), ('b', 1, 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM inventory WHERE item = 'b'; COMMIT;
-- a dropped column: attnums after it must survive the upgrade
CREATE TABLE orders (id int PRIMARY KEY, junk int, shard text, fence bigint);
ALTER TABLE orders DROP COLUMN junk;
SELECT fencing_protect('orders', token_column => 'fence', scope => 'resource',
                       resource_column => 'shard', resource_namespace => 'orders');
INSERT INTO orders VALUES (1, 's', 50);
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
INSERT INTO ledger VALUES (1, 60);
CREATE TABLE events (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE events_a PARTITION OF events FOR VALUES IN ('a');
CREATE TABLE events_b PARTITION OF events FOR VALUES IN ('b');
INSERT INTO events VALUES (1, 'a', 70), (1, 'b', 70);
SELECT fencing_acquire('held', 'h1', '1 day');
-- floors: the tombstone of 'b' retired into inventory's, a resource HWM into
-- namespace uf's
SELECT fencing_enable_retirement('inventory'::regclass);
SELECT fencing_retire('inventory'::regclass, '0 s');
SELECT fencing_resource_advance('x', 90, 'uf');
SELECT fencing_enable_retirement('uf', '1 day');
SELECT fencing_retire('uf', '0 s');
SQL
my $guards_before = query($old, $db, q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_%'});
my $lease = query($old, $db, q{SELECT holder || '|' || token || '|' || live FROM fencing_leases WHERE resource = 'held'});
# Row scope with a primary key: guard, insert recheck, key-move recheck and
# truncate trigger (inventory, events_a, events_b: 12); orders, ledger: guard
# and truncate trigger, 2 each.
is(query($old, $db, 'SELECT count(*) FROM fencing_protected WHERE guard_ok') . " $guards_before",
	'4 16', 'old cluster: every guard in place');
$old->stop;

my $old_bindir = $old->config_data('--bindir');
my $new_bindir = $new->config_data('--bindir');
note 'pg_upgrade from ' . $old->pg_version . ' to ' . $new->pg_version;
my $work = PostgreSQL::Test::Utils::tempdir('upgrade');
my ($out, $err) = ('', '');
# Absolute data directories: pg_upgrade runs in $work, and newer frameworks
# give them relative to the test directory.
IPC::Run::run(
	[ "$new_bindir/pg_upgrade", '-b', $old_bindir, '-B', $new_bindir,
	  '-d', File::Spec->rel2abs($old->data_dir), '-D', File::Spec->rel2abs($new->data_dir),
	  '-p', $old->port, '-P', $new->port,
	  '-s', $new->host, '--link' ],
	'>', \$out, '2>', \$err, init => sub { chdir $work or die $! });
is($? >> 8, 0, 'pg_upgrade --link succeeds') or diag "$out\n$err";
$new->start;

is(query($new, $db, q{SELECT string_agg(table_name || '|' || scope, ' ' ORDER BY table_name::text) FROM fencing_protected}),
	'events|row inventory|row ledger|table orders|resource', 'new cluster: policies kept');
is(query($new, $db, q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_%'}),
	$guards_before, 'new cluster: every fencing trigger came across');
is(query($new, $db, 'SELECT count(*) FROM fencing_protected WHERE guard_ok'),
	'4', 'new cluster: every guard present, enabled and current (guard_ok)');
is(query($new, $db, 'SELECT count(*) FROM fencing_verify_guards()'), '0', 'new cluster: fencing_verify_guards() finds nothing');
is(query($new, $db, q{SELECT fencing_high_water('inventory', '{"item": "b"}') || ' ' ||
        fencing_resource_high_water('s', 'orders') || ' ' || fencing_high_water('ledger')}),
	'30 50 60', 'new cluster: tombstone, resource and table HWMs kept');
is(query($new, $db, q{SELECT holder || '|' || token || '|' || live FROM fencing_leases WHERE resource = 'held'}),
	$lease, 'new cluster: the live lease kept');
is(query($new, $db, q{SELECT (SELECT floor || ' ' || retired FROM fencing.tombstone_floor WHERE relid = 'inventory'::regclass)
        || ' ' || (SELECT floor || ' ' || idle FROM fencing.resource_floor WHERE namespace = 'uf')
        || ' ' || (SELECT count(*) FROM fencing.row_tombstone)}),
	'30 1 90 1 day 0', 'new cluster: floors kept (the retired entries stay gone)');
is(query($new, $db, q{SELECT fencing_resource_advance('x', 89, 'uf')}), 'f',
	'new cluster: a retired resource is judged against its floor');
my %stale = (
	'stale UPDATE refused after upgrade (row scope)' => q{UPDATE inventory SET fence = 9 WHERE item = 'a'},
	'stale re-INSERT of a deleted key refused after upgrade (tombstone)' => q{INSERT INTO inventory VALUES ('b', 1, 25)},
	'stale key move onto a deleted key refused after upgrade' => q{UPDATE inventory SET item = 'b', fence = 20 WHERE item = 'a'},
	'stale write refused after upgrade (resource scope, column after a dropped one)' => q{INSERT INTO orders VALUES (2, 's', 49)},
	'stale write refused after upgrade (table scope)' => q{INSERT INTO ledger VALUES (2, 59)},
	'stale write refused after upgrade (partition leaf)' => q{UPDATE events SET fence = 1 WHERE k = 'b'},
	'stale re-INSERT after TRUNCATE refused after upgrade' =>
	  q{BEGIN; TRUNCATE inventory; INSERT INTO inventory VALUES ('a', 1, 9); COMMIT});
is(sqlstate($new, $db, $stale{$_}), 'TF001', $_) for sort keys %stale;
is(query($new, $db, q{SELECT fencing_acquire('held', 'h2', '1 hour') IS NULL}), 't',
	'the live lease still excludes another holder after upgrade');
is(query($new, $db, q{SELECT count(*) FROM fencing_stats_info}), '1',
	'new cluster: the statistics views answer');
is(query($new, $db, q{SELECT fencing_release('held', token) FROM fencing_leases WHERE resource = 'held'}
	  . q{; SELECT fencing_acquire('held', 'h2', '1 hour') > } . (split /\|/, $lease)[1]), "t\nt",
	'after release, the next token is above every token issued before the upgrade');
is(query($new, $db, q{SELECT fenced_update('inventory', 31, '{"item": "a"}', '{"stock": 2}')}), '1',
	'fresh token admitted after upgrade');
# The state tables' replica trigger comes across ENABLE REPLICA, and a
# replica-mode INSERT of a key the new cluster has (an applied row, a
# data-only restore) still keeps the greater HWM.
is(query($new, $db, q{SELECT string_agg(tgrelid::regclass::text || ':' || tgenabled::text, ' ' ORDER BY tgrelid::regclass::text)
	FROM pg_trigger WHERE tgname = 'replica_keep_highest'}),
	'fencing.lease:R fencing.resource_floor:R fencing.resource_hwm:R fencing.row_tombstone:R fencing.table_hwm:R fencing.tombstone_floor:R',
	'new cluster: replica_keep_highest on the six state tables, ENABLE REPLICA');
query($new, $db, q{SET session_replication_role = replica;
	INSERT INTO fencing.table_hwm VALUES ('ledger', 1);
	INSERT INTO fencing.resource_hwm VALUES ('orders', 's', 1)});
is(query($new, $db, q{SELECT fencing_high_water('ledger') || ' ' || fencing_resource_high_water('s', 'orders')}),
	'60 50', 'new cluster: a replica-mode INSERT of a lower HWM keeps the greater');
$new->stop;
done_testing();
