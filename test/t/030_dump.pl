# pg_dump / pg_restore round trips. Policies (with renamed token columns,
# strict and on_stale settings), guards, HWMs (row, tombstone, resource,
# table) and leases (a live one, a released one) must survive a whole-database
# dump in every format (plain, custom, directory, tar) and a schema-only +
# data-only restore, and so must floors (retired tombstones and resource HWMs), each restored with session_replication_role = replica;
# afterwards stale tokens are refused and no lease token is issued again.
# Also: a plain restore without replica fails closed; pg_dump -t carries a
# table's rows and guards but not fencing's state for it (the documented
# limit, shown); pg_restore --disable-triggers cannot switch guards off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

my $node = fresh_node('dump');
my $work = PostgreSQL::Test::Utils::tempdir('dump');
my $src = 'fencing_dump_src';
query($node, 'postgres', "CREATE DATABASE $src");
$node->safe_psql($src, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10), ('b', 1, 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM inventory WHERE item = 'b'; COMMIT;
ALTER TABLE inventory RENAME COLUMN fence TO epoch;
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence bigint);
SELECT fencing_protect('orders', token_column => 'fence', scope => 'resource',
                       resource_column => 'shard', strict => true);
INSERT INTO orders VALUES (1, 's', 5), (2, 's', 6);
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table', on_stale => 'skip');
INSERT INTO ledger VALUES (1, 7), (2, 8);
SELECT fencing_acquire('held', 'h1', '1 day');
SELECT fencing_release('freed', fencing_acquire('freed', 'h1', '1 day'));
SELECT fencing_release('freed', fencing_acquire('freed', 'h2', '1 day'));
-- Floors: the deleted key's tombstone retired into inventory's floor, and a
-- resource HWM into namespace rf's (with an automatic policy).
SELECT fencing_enable_retirement('inventory'::regclass);
SELECT fencing_retire('inventory'::regclass, '0 s');
SELECT fencing_resource_advance('x', 70, 'rf');
SELECT fencing_enable_retirement('rf', '1 day');
SELECT fencing_retire('rf', '0 s');
SQL
my $held = query($node, $src, q{SELECT token FROM fencing_leases WHERE resource = 'held'});
my $freed = query($node, $src, q{SELECT token FROM fencing_leases WHERE resource = 'freed'});

sub fresh_db
{
	my ($db, $ext) = @_;
	$node->safe_psql('postgres', "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db");
	query($node, $db, 'CREATE EXTENSION fencing') if $ext;
	return $db;
}

# Run a client program (pg_dump, pg_restore, psql) against the node; returns
# (exit code, stderr). REPLICA: with session_replication_role = replica.
sub run_client
{
	my ($replica, @cmd) = @_;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGOPTIONS} = $replica ? '-c session_replication_role=replica' : '';
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	return ($? >> 8, $err);
}

# Everything a whole-database restore must bring back, checked in DB.
sub full_checks
{
	my ($db, $label) = @_;
	is(query($node, $db, q{SELECT string_agg(format('%s|%s|%s|%s|%s', table_name, token_column, scope, strict, on_stale), ' '
	        ORDER BY table_name::text) FROM fencing_protected}),
		'inventory|epoch|row|f|error ledger|fence|table|f|skip orders|fence|resource|t|error', "$label: policies restored");
	is(query($node, $db, q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_guard_%'}),
		'3', "$label: one guard per protected table");
	is(query($node, $db, 'SELECT count(*) FROM fencing_protected WHERE guard_ok'),
		'3', "$label: dumped guards replaced by the policies' own: every guard in place");
	is(query($node, $db, q{SELECT (SELECT count(*) FROM inventory) || ' ' || (SELECT count(*) FROM orders) || ' ' || (SELECT count(*) FROM ledger)}),
		'1 2 2', "$label: rows restored");
	is(query($node, $db, q{SELECT fencing_high_water('inventory', '{"item": "a"}') || ' ' ||
	        fencing_high_water('inventory', '{"item": "b"}') || ' ' || fencing_resource_high_water('s') || ' ' ||
	        fencing_high_water('ledger')}),
		'10 30 6 8', "$label: row HWM, tombstone, resource and table HWMs restored");
	is(query($node, $db, q{SELECT string_agg(resource || '|' || holder || '|' || token || '|' || live, ' ' ORDER BY resource)
	        FROM fencing_leases}),
		"freed|h2|$freed|false held|h1|$held|true", "$label: leases restored (a live one, a released one)");
	is(query($node, $db, q{SELECT (SELECT count(*) FROM fencing.row_tombstone WHERE relid = 'inventory'::regclass) || ' ' ||
	        (SELECT floor || ' ' || enabled FROM fencing.tombstone_floor WHERE relid = 'inventory'::regclass) || ' ' ||
	        (SELECT floor || ' ' || idle FROM fencing.resource_floor WHERE namespace = 'rf') || ' ' ||
	        (SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'rf')}),
		'0 30 true 70 1 day 0', "$label: floors restored (the retired entries stay gone)");
	is(query($node, $db, q{SELECT fencing_resource_advance('x', 69, 'rf')}), 'f',
		"$label: a retired resource is judged against the restored floor");
	is(sqlstate($node, $db, q{INSERT INTO inventory VALUES ('b', 1, 25)}), 'TF001',
		"$label: stale re-INSERT of a deleted key refused (tombstone floor)");
	is(sqlstate($node, $db, q{UPDATE inventory SET epoch = 9 WHERE item = 'a'}), 'TF001',
		"$label: stale UPDATE refused (row HWM, renamed token column)");
	is(sqlstate($node, $db, q{INSERT INTO orders VALUES (3, 's', 6)}), 'TF001',
		"$label: strict resource policy enforced (equal token refused)");
	is(query($node, $db, q{WITH w AS (INSERT INTO ledger VALUES (3, 1) RETURNING 1) SELECT count(*) FROM w}),
		'0', "$label: on_stale skip kept: stale table-scope write skipped");
	is(query($node, $db, q{SELECT fencing_acquire('held', 'h3', '1 hour') IS NULL}),
		't', "$label: the live lease still excludes another holder");
	my $next = query($node, $db, q{SELECT fencing_acquire('freed', 'h3', '1 hour')});
	ok($next > $freed, "$label: the next token of a released lease ($next) is above the dumped one ($freed): none issued twice");
	is(query($node, $db, q{SELECT fenced_update('inventory', 31, '{"item": "a"}', '{"stock": 2}')}),
		'1', "$label: fresh token admitted");
	return;
}

# --- whole-database dumps, every format -----------------------------------------
my ($rc, $err);
for my $fmt (qw(plain custom directory tar))
{
	my $file = "$work/dump.$fmt";
	($rc, $err) = run_client(0, 'pg_dump', '-d', $src, "--format=$fmt", '-f', $file);
	is($rc, 0, "$fmt: pg_dump succeeds") or diag $err;
	my $db = fresh_db("dst_$fmt", 0);
	if ($fmt eq 'plain')
	{
		($rc, $err) = run_client(1, 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $db, '-f', $file);
	}
	else
	{
		($rc, $err) = run_client(1, 'pg_restore', '--exit-on-error', '-d', $db,
			($fmt eq 'directory' ? ('-j', '2') : ()), $file);
	}
	is($rc . $err, '0', "$fmt: restore with session_replication_role = replica succeeds, no message");
	full_checks($db, $fmt);
}

# --- schema-only, then data-only ------------------------------------------------
{
	my $db = fresh_db('dst_split', 0);
	run_client(0, 'pg_dump', '-d', $src, '--schema-only', '-Fc', '-f', "$work/schema.custom");
	run_client(0, 'pg_dump', '-d', $src, '--data-only', '-Fc', '-f', "$work/data.custom");
	($rc, $err) = run_client(1, 'pg_restore', '--exit-on-error', '-d', $db, "$work/schema.custom");
	is($rc, 0, 'schema-only restore succeeds') or diag $err;
	($rc, $err) = run_client(1, 'pg_restore', '--exit-on-error', '-d', $db, "$work/data.custom");
	is($rc . $err, '0', 'data-only restore (session_replication_role = replica) succeeds, no message');
	full_checks($db, 'schema-only + data-only');
}

# --- a plain restore without replica fails closed ------------------------------
{
	my $db = fresh_db('dst_closed', 0);
	($rc, $err) = run_client(0, 'psql', '-X', '-q', '-d', $db, '-f', "$work/dump.plain");
	like($err, qr/stale fencing token/, 'plain restore without replica refuses, rather than accepts, rows below a restored HWM');
}

# --- pg_dump -t ----------------------------------------------------------------
# pg_dump -t of one table carries its rows (a row's token is its row HWM) and
# guard triggers, but not fencing's configuration tables: pg_dump dumps those
# only with the extension. Restored into a database with the extension, a
# table whose dumped guard names a policy this database does not hold (another
# scope or options; a bigint token column, which auto-protection leaves
# alone) is fenced under the dumped policy and refuses every write (TF004)
# until its owner accepts the lost state: never silently unfenced.
{
	my $db = fresh_db('dst_t', 1);
	run_client(0, 'pg_dump', '-d', $src, '-t', $_, '-f', "$work/$_.sql") for qw(ledger orders inventory);
	($rc, $err) = run_client(0, 'psql', '-X', '-q', '-d', $db, '-f', "$work/ledger.sql");
	like($err, qr/WARNING:  table public.ledger was restored without its fencing state/,
		'pg_dump -t: restoring a table fenced under another policy warns that its state is not restored');
	is(query($node, $db, q{SELECT scope || '|' || on_stale || '|' || guard_ok FROM fencing_protected WHERE table_name = 'ledger'::regclass}),
		'table|skip|false', 'pg_dump -t: the table is fenced under its dumped policy, marked');
	is(sqlstate($node, $db, q{BEGIN; SET LOCAL fencing.token = 100; UPDATE ledger SET id = 2 WHERE id = 2; COMMIT}), 'TF004',
		'pg_dump -t: every write to it is refused until the reset');
	is(query($node, $db, q{SELECT fencing_reset_restored('ledger')}), 't', 'pg_dump -t: its owner accepts the loss');
	is(query($node, $db, q{BEGIN; SET LOCAL fencing.token = 1; WITH w AS (UPDATE ledger SET id = 2 WHERE id = 2 RETURNING 1) SELECT count(*) FROM w; COMMIT}),
		'0', 'pg_dump -t: then a stale write is skipped (table HWM raised from the rows, on_stale skip)');
	($rc, $err) = run_client(0, 'psql', '-X', '-q', '-d', $db, '-f', "$work/orders.sql");
	like($err, qr/WARNING:  table public.orders was restored without its fencing state/,
		'pg_dump -t: a table without a policy here takes its dumped guard\'s, with a WARNING');
	is(query($node, $db, q{SELECT scope || '|' || token_column || '|' || guard_ok FROM fencing_protected WHERE table_name = 'orders'::regclass}),
		'resource|fence|false', 'pg_dump -t: ... fenced on its bigint column in resource scope, marked');
	is(sqlstate($node, $db, q{UPDATE orders SET shard = 's' WHERE id = 1}), 'TF004',
		'pg_dump -t: ... and a write to it is refused');
	($rc, $err) = run_client(0, 'psql', '-X', '-q', '-d', $db, '-f', "$work/inventory.sql");
	is(sqlstate($node, $db, q{UPDATE inventory SET epoch = 9 WHERE item = 'a'}), 'TF001',
		'pg_dump -t: row HWMs travel in the rows: stale UPDATE refused');
	is(query($node, $db, q{SELECT coalesce(fencing_high_water('inventory', '{"item": "b"}')::text, 'none')}), 'none',
		'pg_dump -t: tombstones do not travel (the documented limit): the deleted key has no HWM');
	is(sqlstate($node, $db, q{INSERT INTO inventory VALUES ('b', 1, 25)}), '',
		'pg_dump -t restored in origin mode (not the documented replica mode) of a table under the default policy: not marked, so a stale re-INSERT of a deleted key is accepted (docs/operations.md)');
}

# --- pg_restore --disable-triggers -----------------------------------------------
# DISABLE TRIGGER ALL on a fenced table is refused, so the data loads with the
# guards on and rows below a restored HWM are refused (fail closed).
{
	my $db = fresh_db('dst_dt', 0);
	($rc, $err) = run_client(0, 'pg_restore', '-d', $db, '--schema-only', "$work/dump.custom");
	is(join("\n", grep { !/WARNING|^DETAIL|^HINT/ } split /\n/, $err), '',
		'pg_restore --schema-only: no errors (a guard waiting for its policy only warns)');
	($rc, $err) = run_client(0, 'pg_restore', '-d', $db, '--data-only', '--disable-triggers', "$work/dump.custom");
	like($err, qr/cannot disable the fencing guard of table public.inventory/,
		'pg_restore --disable-triggers: disabling a guard is refused, reported');
	is(query($node, $db, q{SELECT string_agg(table_name || '|' || guard_ok, ' ' ORDER BY table_name::text) FROM fencing_protected}),
		'inventory|true ledger|true orders|true', 'pg_restore --disable-triggers: every listed table keeps its guard');
	is(sqlstate($node, $db, q{INSERT INTO inventory VALUES ('b', 1, 25)}), 'TF001',
		'pg_restore --disable-triggers: stale re-INSERT of a deleted key still refused');
}

$node->stop;
done_testing();
