# ALTER EXTENSION fencing UPDATE with state in place, along every update
# script in sql/: install an older version (with the current library, as after
# a package upgrade), make state in every scope (row, tombstones, resource in
# an owned namespace, table, partitions, policies, guards, and leases from 1.1
# on), update, then check every HWM, tombstone, policy, namespace owner, lease
# and guard intact and stale writes refused; then retirement works on the
# state made before the update.
#
# Paths: from every version of the chain straight to the default version
# (ALTER EXTENSION fencing UPDATE), and, when the chain has more than one step,
# 1.0 walked one step at a time (UPDATE TO each version) with the state checked
# after every step.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

my @chain = update_chain();
my $current = $chain[-1];
note "update chain: @chain";

my $node = fresh_node('extupdate');
query($node, 'postgres', 'CREATE ROLE extupdate_team');

my $hwm_sql = q{SELECT fencing_high_water('inventory', '{"item": "a"}') || ' ' ||
       fencing_high_water('inventory', '{"item": "b"}') || ' ' ||
       fencing_resource_high_water('s', 'extupdate') || ' ' ||
       fencing_high_water('ledger') || ' ' ||
       fencing_high_water('events', '{"id": 2, "k": "a"}')};
my $policy_sql = q{SELECT string_agg(table_name || ':' || scope || ':' || strict || ':' || require_token, ' '
       ORDER BY table_name::text) FROM fencing_protected};
my $lease_sql = q{SELECT resource || '|' || holder || '|' || token || '|' || live
       FROM fencing_leases WHERE resource = 'upd'};

sub version_of { query($node, $_[0], q{SELECT extversion FROM pg_extension WHERE extname = 'fencing'}) }

# Whether version a (major.minor) precedes version b.
sub older_than
{
	my ($x, $y) = map { [ split /\./ ] } @_;
	return $x->[0] < $y->[0] || ($x->[0] == $y->[0] && $x->[1] < $y->[1]);
}

sub make_state
{
	my ($db, $from) = @_;
	query($node, 'postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, <<"SQL");
CREATE EXTENSION fencing VERSION '$from';
-- row scope, text key: a live row and a tombstone
CREATE TABLE inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO inventory VALUES ('a', 1, 10), ('b', 1, 20);
BEGIN; SET LOCAL fencing.token = 30; DELETE FROM inventory WHERE item = 'b'; COMMIT;
-- row scope, char(5) key
CREATE TABLE codes (code char(5) PRIMARY KEY, fence fencing_token);
INSERT INTO codes VALUES ('ab', 40);
BEGIN; SET LOCAL fencing.token = 45; DELETE FROM codes WHERE code = 'ab'; COMMIT;
-- resource scope, in a namespace owned by a role
CREATE TABLE orders (id int PRIMARY KEY, shard text, fence fencing_token);
ALTER TABLE orders OWNER TO extupdate_team;
SET ROLE extupdate_team;
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'extupdate');
RESET ROLE;
INSERT INTO orders VALUES (1, 's', 50);
-- table scope, strict
CREATE TABLE ledger (id int PRIMARY KEY, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table', strict => true);
INSERT INTO ledger VALUES (1, 60);
-- row scope, partitioned
CREATE TABLE events (id int, k text, fence fencing_token, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
CREATE TABLE events_a PARTITION OF events FOR VALUES IN ('a');
INSERT INTO events VALUES (1, 'a', 70), (2, 'a', 70);
BEGIN; SET LOCAL fencing.token = 75; DELETE FROM events WHERE id = 2; COMMIT;
SQL
	# 1.0's library keyed char(n) tombstones by the padded bytes: 'cd' as
	# 'cd   ', as it wrote them; 1.0 -> 1.1 re-keys them.
	query($node, $db, q{INSERT INTO fencing.row_tombstone VALUES ('codes'::regclass, ARRAY['6364202020'], 47)})
	  if $from eq '1.0';
	# Leases exist from 1.1 on: one live lease, held across the update.
	query($node, $db, q{SELECT fencing_acquire('upd', 'h1', '1 hour')}) if $from ne '1.0';
	# Before 1.4 only row scope had a truncate trigger: the library here
	# installs one in every scope, so take the resource- and table-scope ones
	# out (with the guard event triggers off, which would put them back) to
	# have the state an older library left; the update must re-install them.
	if ($from ne '1.0' && older_than($from, '1.4'))
	{
		query($node, $db, q{ALTER EVENT TRIGGER fencing_guard_ddl_end DISABLE;
			DO $$DECLARE t record; BEGIN
			FOR t IN SELECT tgname, tgrelid::regclass AS rel FROM pg_trigger
			          WHERE tgfoid = 'fencing.truncate_guard'::regproc
			            AND tgrelid IN ('orders'::regclass, 'ledger'::regclass) LOOP
				EXECUTE format('DROP TRIGGER %I ON %s', t.tgname, t.rel);
			END LOOP; END $$;
			ALTER EVENT TRIGGER fencing_guard_ddl_end ENABLE ALWAYS});
		is(query($node, $db, q{SELECT string_agg(problem, ' ' ORDER BY table_name::text)
		                         FROM fencing_verify_guards()}),
			'public.ledger: truncate trigger missing public.orders: truncate trigger missing',
			"$from: resource and table scope without a truncate trigger, as protected before 1.4");
	}
	return;
}

# State checks that must hold after every step; the stale-write checks, which
# write, only at the end of a path.
sub check_state
{
	my ($db, $label, $from, $version, $before) = @_;
	is(version_of($db), $version, "$label: now at version $version");
	is(query($node, $db, $policy_sql), $before->{policies}, "$label: policies intact");
	is(query($node, $db, $hwm_sql), $before->{hwms}, "$label: HWMs and tombstones intact");
	if ($from eq '1.0')
	{
		is(query($node, $db, q{SELECT fencing_high_water('codes', '{"code": "ab"}') || ' ' ||
		                          fencing_high_water('codes', '{"code": "cd"}')}),
			'45 47', "$label: char(n) tombstones: the new form kept, 1.0's padded form re-keyed");
	}
	else
	{
		is(query($node, $db, q{SELECT fencing_high_water('codes', '{"code": "ab"}')}),
			'45', "$label: char(n) tombstone intact");
		is(query($node, $db, $lease_sql), $before->{lease}, "$label: live lease intact (resource, holder, token)");
	}
	is(query($node, $db, 'SELECT name || \'|\' || owner || \'|\' || pg_typeof(owner) FROM fencing.resource_namespace'),
		'extupdate|extupdate_team|regrole', "$label: namespace owner kept, by role OID");
	is(query($node, $db, 'SELECT count(*) FROM fencing_protected WHERE guard_ok'),
		'5', "$label: every guard an ordinary, current trigger (guard_ok)");
	is(query($node, $db, q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'zz_fencing_%' AND tgisinternal}),
		'0', "$label: no internal fencing trigger left");
	is(query($node, $db, 'SELECT count(*) FROM fencing_verify_guards()'),
		'0', "$label: fencing_verify_guards() finds nothing");
	is(query($node, $db, q{SELECT string_agg(c.relname || ':' || t.tgname, ' ' ORDER BY c.relname)
	                         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
	                        WHERE t.tgfoid = 'fencing.truncate_guard'::regproc}) =~ s/_[0-9]+\b//gr,
		'codes:zz_fencing_truncate events_a:zz_fencing_truncate inventory:zz_fencing_truncate '
		  . 'ledger:zz_fencing_truncate_check orders:zz_fencing_truncate_check',
		"$label: a truncate trigger on every guarded table, in every scope");
	# From 1.4: logical apply only raises the state tables' HWMs and tokens.
	my ($major, $minor) = split /\./, $version;
	is(query($node, $db, q{SELECT count(*) FROM pg_trigger WHERE tgname = 'replica_keep_highest' AND tgenabled = 'R'
		AND tgrelid IN (SELECT to_regclass('fencing.' || t)
		                  FROM unnest(ARRAY['resource_hwm', 'table_hwm', 'row_tombstone', 'lease']) t)}),
		($major > 1 || $minor >= 4) ? '4' : '0', "$label: ENABLE REPLICA keep-highest triggers on the state tables");
	return;
}

sub check_writes
{
	my ($db, $label, $from, $before) = @_;
	my %stale = (
		'stale UPDATE refused (row scope)' => q{UPDATE inventory SET fence = 9 WHERE item = 'a'},
		'stale re-INSERT of a deleted key refused (tombstone)' => q{INSERT INTO inventory VALUES ('b', 1, 25)},
		'stale re-INSERT of a deleted char(n) key refused' => q{INSERT INTO codes VALUES ('ab', 44)},
		'stale key move onto a deleted key refused' => q{UPDATE inventory SET item = 'b', fence = 20 WHERE item = 'a'},
		'stale write refused (resource scope)' => q{INSERT INTO orders VALUES (2, 's', 49)},
		'equal token refused (table scope, strict)' => q{INSERT INTO ledger VALUES (2, 60)},
		'stale re-INSERT refused (partition)' => q{INSERT INTO events VALUES (2, 'a', 74)},
		'stale re-INSERT after TRUNCATE refused' =>
		  q{BEGIN; TRUNCATE inventory; INSERT INTO inventory VALUES ('a', 1, 9); COMMIT});
	$stale{"stale re-INSERT of a deleted char(n) key refused (1.0's tombstone)"} =
	  q{INSERT INTO codes VALUES ('cd', 46)}
	  if $from eq '1.0';
	for my $name (sort keys %stale)
	{
		is(sqlstate($node, $db, $stale{$name}), 'TF001', "$label: $name");
	}
	if ($from ne '1.0')
	{
		my ($t) = $before->{lease} =~ /^upd\|h1\|(\d+)\|/;
		is(query($node, $db, q{SELECT fencing_acquire('upd', 'h2', '1 hour') IS NULL}),
			't', "$label: the lease held across the update still excludes another holder");
		# 1.5's lease features on the lease made before the update.
		is(query($node, $db, q{SELECT fencing_acquire('upd', 'h1', '2 hours')}),
			$t, "$label: its holder re-acquires the lease made before the update: the same token");
		is(query($node, $db, "SELECT fencing_check('upd', $t) || '|' || fencing_check('upd', $t - 1)"),
			'true|false', "$label: fencing_check on the lease made before the update");
		is(query($node, $db, q{SELECT fencing_acquire_all(ARRAY['upd', 'upd-new'], 'h2', '1 hour') IS NULL}),
			't', "$label: fencing_acquire_all including the held lease gets none");
		my $next = query($node, $db, "SELECT fencing_release('upd', $t); SELECT fencing_acquire('upd', 'h2', '1 hour')");
		$next = (split /\n/, $next)[-1];
		ok($next > $t, "$label: after its release the next token ($next) is above the held one ($t)");
	}
	is( query($node, $db, q{SELECT fenced_update('inventory', 31, '{"item": "a"}', '{"stock": 2}')}) . '|'
		  . query($node, $db, q{SELECT fenced_update('ledger', 61, '{"id": 1}', '{}')}),
		'1|1', "$label: fresh tokens admitted");
	return;
}

# From 1.2 on: the statistics views answer over the updated state, and
# fencing_stats_reset() is not PUBLIC's.
sub check_statistics
{
	my ($db, $label, $from, $before) = @_;
	return if query($node, $db, q{SELECT to_regclass('fencing_stats') IS NULL}) eq 't';
	is( query($node, $db, q{SELECT string_agg(kind || ':' || coalesce(table_name::text, namespace), ' '
	                                        ORDER BY kind, table_name::text) FROM fencing_stats}),
		query($node, $db, q{SELECT string_agg(k, ' ' ORDER BY k) FROM (
	                          SELECT 'namespace:' || name AS k FROM fencing.resource_namespace
	                          UNION ALL SELECT 'table:' || table_name FROM fencing_protected) s}),
		"$label: fencing_stats lists every protected table and namespace");
	if ($from ne '1.0')
	{
		my ($t) = $before->{lease} =~ /^upd\|h1\|(\d+)\|/;
		is(query($node, $db, q{SELECT current_token || ':' || live FROM fencing_lease_stats WHERE resource = 'upd'}),
			"$t:true", "$label: fencing_lease_stats shows the held lease's token");
	}
	is(query($node, $db, q{SELECT has_function_privilege('public', 'fencing_stats_reset()', 'EXECUTE')}),
		'f', "$label: fencing_stats_reset() not granted to PUBLIC");
	return;
}

# From 1.4 on a newly protected table requires a token; the tables protected
# before 1.4 keep require_token off and their token-less writes across the
# update (tables protected under 1.4 require a token from the start).
sub check_fail_closed
{
	my ($db, $label, $from) = @_;
	return if query($node, $db, q{SELECT extversion < '1.4' FROM pg_extension WHERE extname = 'fencing'}) eq 't';
	return unless older_than($from, '1.4');
	is(query($node, $db, q{SELECT string_agg(DISTINCT require_token::text, ',') FROM fencing_protected}),
		'false', "$label: tables protected before the update keep require_token off");
	is(sqlstate($node, $db, q{UPDATE inventory SET stock = 3 WHERE item = 'a'}),
		'', "$label: a token-less write to a table protected before the update is still admitted");
	query($node, $db, q{CREATE TABLE new_declared (id int PRIMARY KEY, fence fencing_token);
	                    CREATE TABLE new_explicit (id int PRIMARY KEY, tok bigint);
	                    SELECT fencing_protect('new_explicit', token_column => 'tok')});
	is(query($node, $db, q{SELECT string_agg(table_name || ':' || require_token, ' ' ORDER BY table_name::text)
	                         FROM fencing_protected WHERE table_name::text LIKE 'new_%'}),
		'new_declared:true new_explicit:true', "$label: a table protected after the update requires a token");
	is(sqlstate($node, $db, q{INSERT INTO new_declared VALUES (1)}) . '|'
		  . sqlstate($node, $db, q{INSERT INTO new_explicit VALUES (1)}),
		'TF002|TF002', "$label: a token-less write to a newly protected table is refused (TF002)");
	is(query($node, $db, q{SELECT pg_get_function_arguments('fencing_protect'::regproc)}),
		query($node, 'postgres', q{SELECT 'target regclass, token_column name DEFAULT NULL::name, '
		  || 'scope text DEFAULT ''row''::text, resource_column name DEFAULT NULL::name, '
		  || 'resource_namespace text DEFAULT NULL::text, on_stale text DEFAULT ''error''::text, '
		  || 'strict boolean DEFAULT false, require_token boolean DEFAULT true'}),
		"$label: fencing_protect() defaults to require_token => true");
	return;
}

# Retirement on state made before the update: entries count as idle from the
# update on (raised_at's default), so a day's idle time retires nothing yet;
# none retires immediately, old keys then read as the floor (their HWM) and
# stale writes stay refused.
sub check_retirement
{
	my ($db, $label) = @_;
	my $s_hwm = query($node, $db, q{SELECT fencing_resource_high_water('s', 'extupdate')});
	my $b_hwm = query($node, $db, q{SELECT fencing_high_water('inventory', '{"item": "b"}')});
	is(query($node, $db, q{SELECT count(*) FROM fencing.resource_hwm WHERE raised_at IS NULL}), '0',
		"$label: every existing HWM has raised_at");
	query($node, $db, q{SELECT fencing_enable_retirement('extupdate')});
	is(sqlstate($node, $db, q{SELECT fencing_enable_retirement('inventory')}), '42P08',
		"$label: a fenced table's name without a cast is not taken for a namespace");
	query($node, $db, q{SELECT fencing_enable_retirement('inventory'::regclass)});
	is(query($node, $db, q{SELECT count(*) FROM fencing.resource_floor WHERE namespace = 'inventory'}), '0',
		"$label: the refused call enabled no namespace");
	is(query($node, $db, q{SELECT fencing_retire('extupdate', '1 day') || ' ' ||
	        fencing_retire('inventory'::regclass, '1 day')}), '0 0',
		"$label: entries made before the update are idle only since it");
	ok(query($node, $db, q{SELECT fencing_retire('extupdate', '0 s')}) >= 1, "$label: retirement works after the update");
	is(query($node, $db, q{SELECT fencing_retire('inventory'::regclass, '0 s')}), '1',
		"$label: the tombstone retires after the update");
	is(query($node, $db, q{SELECT count(*) FROM fencing.resource_hwm WHERE namespace = 'extupdate'}) . ' ' .
	   query($node, $db, q{SELECT fencing_resource_high_water('s', 'extupdate') || ' ' ||
	        fencing_high_water('inventory', '{"item": "b"}')}),
		"0 $s_hwm $b_hwm", "$label: retired keys keep their HWMs (as the floors)");
	is(sqlstate($node, $db, "INSERT INTO orders VALUES (90, 's', " . ($s_hwm - 1) . ")"), 'TF001',
		"$label: a stale write to a retired resource is refused");
	is(sqlstate($node, $db, "INSERT INTO inventory VALUES ('b', 1, " . ($b_hwm - 1) . ")"), 'TF001',
		"$label: a stale re-INSERT of a retired tombstone's key is refused");
	return;
}

# From 1.6 on: a table swap (fencing_transfer_state) of tables fenced before
# the update carries their tombstones, table HWM and policy; a drop and
# recreate in one transaction (Alembic's batch mode) too.
sub check_swap
{
	my ($db, $label) = @_;
	my $state_sql = q{SELECT fencing_high_water('inventory', '{"item": "b"}') || ' ' || fencing_high_water('ledger')
	                  || ' ' || (SELECT scope || '/' || strict FROM fencing_protected WHERE table_name = 'ledger'::regclass)};
	my $before = query($node, $db, $state_sql);
	$node->safe_psql($db, q{
CREATE TABLE inventory_new (LIKE inventory INCLUDING ALL);
INSERT INTO inventory_new SELECT * FROM inventory;
CREATE TABLE ledger_new (LIKE ledger INCLUDING ALL);
INSERT INTO ledger_new SELECT * FROM ledger;
BEGIN;
SELECT fencing_transfer_state('inventory', 'inventory_new');
SELECT fencing_transfer_state('ledger', 'ledger_new');
ALTER TABLE inventory RENAME TO inventory_old;
ALTER TABLE inventory_new RENAME TO inventory;
ALTER TABLE ledger RENAME TO ledger_old;
ALTER TABLE ledger_new RENAME TO ledger;
COMMIT;
DROP TABLE inventory_old, ledger_old;
BEGIN;
DROP TABLE codes;
CREATE TABLE codes (code char(5) PRIMARY KEY, fence fencing_token, extra int);
COMMIT;});
	is(query($node, $db, $state_sql), $before, "$label: a table swap after the update carries tombstones, the table HWM and the policy");
	is(sqlstate($node, $db, q{BEGIN; SET LOCAL fencing.token = 25; INSERT INTO inventory VALUES ('b', 1); COMMIT}),
		'TF001', "$label: after the swap a stale re-insert of a deleted key is refused");
	is(query($node, $db, q{SELECT fencing_high_water('codes', '{"code": "ab"}')}), '45',
		"$label: a drop and recreate in one transaction keeps the tombstones");
	return;
}

# The extension's members, to compare an updated install with a fresh one.
my $members_sql = q{SELECT string_agg(pg_describe_object(classid, objid, objsubid), ',' ORDER BY 1)
       FROM pg_depend WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'};
my @updated;

sub snapshot
{
	my ($db, $from) = @_;
	my %b = (policies => query($node, $db, $policy_sql), hwms => query($node, $db, $hwm_sql));
	$b{lease} = query($node, $db, $lease_sql) if $from ne '1.0';
	return \%b;
}

my $n = 0;
# Every version straight to the default one.
for my $i (0 .. $#chain - 1)
{
	my $from = $chain[$i];
	my $db = 'upd' . $n++;
	my $label = "$from -> $current";
	make_state($db, $from);
	my $before = snapshot($db, $from);
	is(version_of($db) . '|' . $before->{hwms}, "$from|10 30 50 60 75", "$label: $from installed with state in every scope");
	my ($ok, $out, $err) = $node->psql($db, 'ALTER EXTENSION fencing UPDATE');
	is($ok . ($err =~ /ERROR/ ? $err : ''), '0', "$label: ALTER EXTENSION fencing UPDATE succeeds");
	check_state($db, $label, $from, $current, $before);
	check_statistics($db, $label, $from, $before);
	check_writes($db, $label, $from, $before);
	check_fail_closed($db, $label, $from);
	check_retirement($db, $label);
	check_swap($db, $label);
	push @updated, [ $db, $label ];
}

# 1.0 walked one step at a time, when there is more than one step.
if (@chain > 2)
{
	my $db = 'upd_walk';
	make_state($db, '1.0');
	my $before = snapshot($db, '1.0');
	for my $v (@chain[ 1 .. $#chain ])
	{
		my $label = "1.0 stepwise, at $v";
		my ($ok, $out, $err) = $node->psql($db, "ALTER EXTENSION fencing UPDATE TO '$v'");
		is($ok . ($err =~ /ERROR/ ? $err : ''), '0', "$label: ALTER EXTENSION fencing UPDATE TO '$v' succeeds");
		check_state($db, $label, '1.0', $v, $before);
	}
	check_statistics($db, '1.0 stepwise', '1.0', $before);
	check_writes($db, '1.0 stepwise', '1.0', $before);
	check_fail_closed($db, '1.0 stepwise', '1.0');
	check_retirement($db, '1.0 stepwise');
	check_swap($db, '1.0 stepwise');
	push @updated, [ $db, '1.0 stepwise' ];
}

# Every path ends with the objects of a fresh CREATE EXTENSION.
query($node, 'postgres', 'CREATE DATABASE upd_fresh');
query($node, 'upd_fresh', 'CREATE EXTENSION fencing');
my $fresh = query($node, 'upd_fresh', $members_sql);
is(query($node, $_->[0], $members_sql), $fresh, "$_->[1]: the same extension objects as a fresh install")
  for @updated;
# ... and the same table definitions: column types, collations (1.3 made the
# HWM keys COLLATE "C"), defaults, NOT NULL, indexes.
my $columns_sql = q{SELECT string_agg(format('%s.%s %s %s %s %s', c.relname, a.attname,
           format_type(a.atttypid, a.atttypmod), coalesce(co.collname, '-'), a.attnotnull,
           coalesce(pg_get_expr(d.adbin, d.adrelid), '-')), ',' ORDER BY c.relname, a.attnum)
       || ' | ' || (SELECT string_agg(regexp_replace(pg_get_indexdef(i.indexrelid), '_pkey[0-9]*', '_pkey'), ','
                                  ORDER BY regexp_replace(pg_get_indexdef(i.indexrelid), '_pkey[0-9]*', '_pkey'))
                      FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
                     WHERE t.relnamespace = 'fencing'::regnamespace)
       FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       LEFT JOIN pg_collation co ON co.oid = a.attcollation
       LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
      WHERE c.relnamespace = 'fencing'::regnamespace AND c.relkind = 'r'};
my $fresh_columns = query($node, 'upd_fresh', $columns_sql);
like($fresh_columns, qr/resource_hwm\.resource text C .*row_tombstone\.key text\[\] C /,
	'fresh install: the HWM keys are COLLATE "C"');
is(query($node, $_->[0], $columns_sql), $fresh_columns,
	"$_->[1]: the same table columns and indexes as a fresh install")
  for @updated;

# Before ALTER EXTENSION UPDATE (the new library, the previous version's SQL,
# as right after a package upgrade): DDL on fenced tables keeps that version's
# behaviour. A DROP of a fenced table with state works (it called 1.6's
# fencing.keep_dropped_state and failed with 42883), and dropping a row-scope
# key with tombstones is refused with 55000 as before (not 42883).
{
	my $prev = $chain[-2];
	query($node, 'postgres', 'CREATE DATABASE upd_notyet');
	$node->safe_psql('upd_notyet', qq{
CREATE EXTENSION fencing VERSION '$prev';
CREATE TABLE kept (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO kept VALUES (1, 'a', 5), (2, 'b', 5);
BEGIN; SET LOCAL fencing.token = 9; DELETE FROM kept WHERE id = 2; COMMIT;
CREATE TABLE led (id int PRIMARY KEY, v text, tok fencing_token);
SELECT fencing_protect('led', scope => 'table');
BEGIN; SET LOCAL fencing.token = 50; INSERT INTO led VALUES (1, 'x'); COMMIT;});
	is(sqlstate($node, 'upd_notyet', 'ALTER TABLE kept DROP CONSTRAINT kept_pkey'), '55000',
		"$prev SQL with the new library: dropping a key with tombstones is refused as before");
	is(sqlstate($node, 'upd_notyet', 'DROP TABLE led'), '',
		"$prev SQL with the new library: a fenced table-scope table can be dropped");
	is(sqlstate($node, 'upd_notyet', 'BEGIN; DROP TABLE kept; CREATE TABLE kept (id int PRIMARY KEY); COMMIT'), '',
		"$prev SQL with the new library: a row-scope table with tombstones can be dropped and recreated");
}

note 'update paths tested: ' . join(', ',
	(map { "$_ -> $current" } @chain[ 0 .. $#chain - 1 ]),
	(@chain > 2 ? ('1.0 -> ' . join(' -> ', @chain[ 1 .. $#chain ])) : ()));
$node->stop;
done_testing();
