# kill -9 right after a recreate's COMMIT under synchronous_commit = off.
#
# A fenced table dropped and re-created in one transaction (copy, DROP,
# RENAME: Alembic's batch mode) hands its tombstones, table HWM and rows'
# state to the new table in that transaction. Acknowledged under
# synchronous_commit = off and the server killed before the WAL writer (slowed
# to 10 s) flushes: whether or not the commit reached the disk, the table of
# that name must come back with the state (the old table's, or the new one's
# adopted copy), never without it; stale writes are refused after recovery.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FencingTest;

become_subreaper();
my $node = fresh_node('recreate', conf => "wal_writer_delay = 10000ms\n");
my $db = 'postgres';

$node->safe_psql($db, <<'SQL');
CREATE EXTENSION fencing;
CREATE TABLE rows_t (id int PRIMARY KEY, v text, tok fencing_token);
INSERT INTO rows_t SELECT g, 'v' || g, 10 + g FROM generate_series(1, 100) g;
BEGIN; SET LOCAL fencing.token = 500; DELETE FROM rows_t WHERE id <= 20; COMMIT;
CREATE TABLE tab_t (id int PRIMARY KEY, v text, tok fencing_token);
SELECT fencing_protect('tab_t', 'tok', scope => 'table');
BEGIN; SET LOCAL fencing.token = 700; INSERT INTO tab_t SELECT g, 'v' || g, 700 FROM generate_series(1, 10) g; COMMIT;
CHECKPOINT;
SQL

# Each migration in one transaction, acknowledged asynchronously; the new
# tables have an extra column to tell them from the old ones.
my $acked = query($node, $db, q{
SET synchronous_commit = off;
BEGIN;
CREATE TABLE rows_new (id int PRIMARY KEY, v text, tok fencing_token, extra int);
INSERT INTO rows_new (id, v, tok) SELECT id, v, tok FROM rows_t;
DROP TABLE rows_t;
ALTER TABLE rows_new RENAME TO rows_t;
CREATE TABLE tab_new (id int PRIMARY KEY, v text, tok fencing_token, extra int);
INSERT INTO tab_new (id, v, tok) SELECT id, v, tok FROM tab_t;
DROP TABLE tab_t;
ALTER TABLE tab_new RENAME TO tab_t;
COMMIT;
SELECT count(*) FROM fencing_protected WHERE table_name::text IN ('rows_t', 'tab_t')});
is($acked, '2', 'both recreates acknowledged, both tables fenced again');
crash_node($node);
is(query($node, $db, 'SELECT 1'), '1', 'server recovered after SIGKILL');

my $survived = query($node, $db, q{SELECT count(*) FROM pg_attribute
      WHERE attrelid IN ('rows_t'::regclass, 'tab_t'::regclass) AND attname = 'extra'});
note "the asynchronously acknowledged recreates " .
  ($survived eq '2' ? 'survived the crash' : $survived eq '0' ? 'were lost: the old tables are back' : 'survived in part');
ok($survived eq '2' || $survived eq '0', 'the two recreates (one transaction) survived or were lost together');
is(query($node, $db, q{SELECT count(*) FROM fencing_protected WHERE table_name::text IN ('rows_t', 'tab_t')}),
	'2', 'both tables of those names are fenced after recovery');
is(query($node, $db, q{SELECT count(*) FROM rows_t}), '80', 'the 80 rows are there');
is(query($node, $db, q{SELECT fencing_high_water('rows_t', '{"id": 5}')}), '500',
	'a deleted key\'s tombstone (500) is there after recovery');
is(sqlstate($node, $db, q{BEGIN; SET LOCAL fencing.token = 100; INSERT INTO rows_t (id, v, tok) VALUES (5, 'stale', 100); COMMIT}),
	'TF001', 'a stale re-INSERT of the deleted key is refused');
is(sqlstate($node, $db, q{BEGIN; SET LOCAL fencing.token = 60; UPDATE rows_t SET v = 'stale', tok = 60 WHERE id = 90; COMMIT}),
	'TF001', 'a stale UPDATE of a live row (token 100) is refused');
is(query($node, $db, q{SELECT fencing_high_water('tab_t')}), '700', 'the table HWM (700) is there after recovery');
is(sqlstate($node, $db, q{BEGIN; SET LOCAL fencing.token = 699; INSERT INTO tab_t (id, v, tok) VALUES (50, 'stale', 699); COMMIT}),
	'TF001', 'a stale write to the table-scope table is refused');

$node->stop;
done_testing();
