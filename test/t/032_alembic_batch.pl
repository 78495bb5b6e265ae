# Alembic's batch mode (op.batch_alter_table(recreate='always'): create
# _alembic_tmp_<t>, copy, DROP the table, RENAME the copy) on fenced tables in
# row (with tombstones), table and resource scope, with real Alembic: the
# recreated table comes back under its policy with its tombstones and HWMs
# (the DROP keeps them for the table that takes the name in the same
# transaction), and refuses the stale writes the old table refused. A batch
# that drops the token column is refused, and the documented way through
# (fencing_forget_dropped() in the migration) works.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

my $python = '/usr/bin/python3';
plan skip_all => 'needs /usr/bin/python3 with alembic and sqlalchemy (python3-alembic)'
  unless -x $python && system($python, '-c', 'import alembic, sqlalchemy, psycopg2') == 0;

my $node = fresh_node('alembic');
my $db = 'alembic_batch';
query($node, 'postgres', "CREATE DATABASE $db");
$node->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE inv (id int PRIMARY KEY, stock int, fence fencing_token);
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO inv VALUES (1, 1), (2, 2); COMMIT;
BEGIN; SET LOCAL fencing.token = 20; DELETE FROM inv WHERE id = 2; COMMIT;
CREATE TABLE ledger (id int PRIMARY KEY, amount int, fence fencing_token);
SELECT fencing_protect('ledger', scope => 'table');
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO ledger VALUES (1, 1), (2, 2); COMMIT;
SELECT fencing_advance('ledger', 50);
CREATE TABLE orders (id int PRIMARY KEY, shard text NOT NULL, v int, fence fencing_token);
SELECT fencing_protect('orders', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'shop');
BEGIN; SET LOCAL fencing.token = 10; INSERT INTO orders VALUES (1, 's1', 0); COMMIT;
SELECT fencing_resource_advance('s1', 50, 'shop');
SQL

my $dsn = sprintf('postgresql+psycopg2://%s@/%s?host=%s&port=%s',
	scalar(getpwuid($<)), $db, $node->host, $node->port);
my $script = repo_root() . '/test/t/alembic/batch_recreate.py';

sub migrate
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ $python, $script, $dsn, @_ ], '>', \$out, '2>', \$err, IPC::Run::timeout(120));
	return ($? >> 8, $out . $err);
}

my ($rc, $out) = migrate(qw(inv ledger orders));
is($rc, 0, 'batch recreate of row-, table- and resource-scope tables succeeds') or diag($out);
is(query($node, $db, q{SELECT string_agg(format('%s|%s|%s|%s', table_name, scope, coalesce(resource_namespace, ''), guard_ok),
        ' ' ORDER BY table_name::text) FROM fencing_protected}),
	'inv|row||t ledger|table||t orders|resource|shop|t', 'each recreated table keeps its policy');
is(query($node, $db, q{SELECT count(*) FROM pg_attribute WHERE attname = 'extra' AND attrelid IN ('inv'::regclass, 'ledger'::regclass, 'orders'::regclass)}),
	'3', 'the migration ran (the new column is there)');
is(query($node, $db, q{SELECT fencing_high_water('inv', '{"id": 2}') || ' ' || fencing_high_water('ledger')}),
	'20 50', 'the tombstone and the table HWM came along');
is(sqlstate($node, $db, 'BEGIN; SET LOCAL fencing.token = 15; INSERT INTO inv (id, stock) VALUES (2, -1); COMMIT'),
	'TF001', 'row scope: a stale re-insert of a deleted key is refused');
is(sqlstate($node, $db, 'BEGIN; SET LOCAL fencing.token = 20; UPDATE ledger SET amount = -1; COMMIT'),
	'TF001', 'table scope: token 20 below the HWM 50 is refused');
is(sqlstate($node, $db, 'BEGIN; SET LOCAL fencing.token = 20; UPDATE orders SET v = -1; COMMIT'),
	'TF001', 'resource scope: token 20 below the HWM 50 is refused');
is(query($node, $db, q{SELECT count(*) FROM fencing.held_key}), '0', 'no primary key left held');

# A batch that would lose the state (the token column dropped) is refused, and
# nothing changes.
$node->safe_psql($db, q{CREATE TABLE notoken (id int PRIMARY KEY, fence fencing_token);
	SELECT fencing_protect('notoken', scope => 'table'); SELECT fencing_advance('notoken', 40);});
my ($out2, $err2) = ('', '');
IPC::Run::run([ $python, '-c', <<'PY', $dsn ], '>', \$out2, '2>', \$err2, IPC::Run::timeout(120));
import sys, sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations
eng = sa.create_engine(sys.argv[1])
try:
    with eng.begin() as conn:
        op = Operations(MigrationContext.configure(conn))
        with op.batch_alter_table('notoken', recreate='always') as b:
            b.drop_column('fence')
except sa.exc.DBAPIError as e:
    print(e.orig.pgcode)
    sys.exit(1)
PY
is($? >> 8, 1, 'a batch that drops the token column is refused');
like($out2, qr/55000/, '... with 55000');
is(query($node, $db, q{SELECT scope || ' ' || fencing_high_water('notoken') FROM fencing_protected WHERE table_name = 'notoken'::regclass}),
	'table 40', '... and the table is as it was');

done_testing();
