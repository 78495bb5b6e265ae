# What a logical subscriber must refuse while it subscribes, beyond
# 071_logical_gaps.pl.
#  * TRUNCATE of a subscribed protected table in every scope (55000): the
#    publisher's later UPDATEs and DELETEs of the rows find nothing to change
#    here, and the subscriber promoted later has lost them.
#  * Leases while fencing.lease is subscribed. The
# publisher keeps issuing tokens for its resources; a token issued on the
# subscriber meanwhile (fencing_acquire there) is one the publisher issues
# again to another holder, and a token is a right to write anywhere it is
# checked: two holders would write with the same token, both admitted. A
# fencing_release() on the subscriber ends the publisher's live lease there,
# letting the subscriber issue the next token at once. Both must be refused
# (55000) while an enabled subscription replicates fencing.lease.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use FencingTest;

my $db = 'postgres';
my $pub = fresh_node('pub', allows_streaming => 'logical');
my $sub = fresh_node('sub');
my $schema = <<'SQL';
CREATE EXTENSION fencing;
CREATE TABLE l_row (id int PRIMARY KEY, v int, fence fencing_token);
CREATE TABLE l_tab (id int PRIMARY KEY, v int, fence fencing_token);
SELECT fencing_protect('l_tab', scope => 'table');
CREATE TABLE l_res (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('l_res', scope => 'resource', resource_column => 'shard');
SQL
$pub->safe_psql($db, $schema);
$sub->safe_psql($db, $schema);
query($pub, $db, 'CREATE PUBLICATION lpub FOR TABLE l_row, l_tab, l_res');
query($pub, $db, q{SELECT count(*) FROM fencing_publish('lpub')});
$pub->safe_psql($db, <<'SQL');
BEGIN;
SET LOCAL fencing.token = 5;
INSERT INTO l_row VALUES (1, 0);
INSERT INTO l_tab VALUES (1, 0);
INSERT INTO l_res VALUES (1, 's1');
COMMIT;
SQL
my $held = query($pub, $db, q{SELECT fencing_acquire('job-1', 'pub-A', '1 hour')});
query($sub, $db, 'CREATE SUBSCRIPTION lsub CONNECTION $c$' . $pub->connstr($db) . '$c$ PUBLICATION lpub');

my $deadline = time + 60;
while (time < $deadline)
{
	last if query($sub, $db, q{SELECT count(*) FROM fencing.lease WHERE resource = 'job-1'}) eq '1'
	  && query($sub, $db, q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate NOT IN ('r', 's')}) eq 't';
	sleep 0.2;
}
is(query($sub, $db, q{SELECT token FROM fencing.lease WHERE resource = 'job-1'}), $held,
	"the publisher's live lease arrived");
is(query($sub, $db, q{SELECT (SELECT count(*) FROM l_row) + (SELECT count(*) FROM l_tab) + (SELECT count(*) FROM l_res)}),
	'3', 'the rows arrived');

for my $table (qw(l_row l_tab l_res))
{
	is(sqlstate($sub, $db, "BEGIN; SET LOCAL fencing.token = 9; TRUNCATE $table; COMMIT"), '55000',
		"TRUNCATE $table on the subscriber is refused");
}
is(query($sub, $db, q{SELECT (SELECT count(*) FROM l_row) + (SELECT count(*) FROM l_tab) + (SELECT count(*) FROM l_res)}),
	'3', 'the subscribed rows are all still there');

# A resource the publisher has not issued yet: the subscriber's token and the
# publisher's first one must not be the same token for two holders.
my $state = sqlstate($sub, $db, q{SELECT fencing_acquire('job-2', 'sub-B', '1 hour')});
my $sub_tok = $state eq ''
  ? query($sub, $db, q{SELECT token FROM fencing.lease WHERE resource = 'job-2' AND holder = 'sub-B'})
  : '';
my $pub_tok = query($pub, $db, q{SELECT fencing_acquire('job-2', 'pub-C', '1 hour')});
isnt($sub_tok, $pub_tok, "a token issued on the subscriber is not issued again by the publisher (sub '$sub_tok', pub '$pub_tok')");
is($state, '55000', 'fencing_acquire on a subscriber of fencing.lease is refused');

# The publisher's live lease, released on the subscriber.
is(sqlstate($sub, $db, "SELECT fencing_release('job-1', $held)"), '55000',
	"fencing_release on the subscriber of the publisher's live lease is refused");
is(sqlstate($sub, $db, "SELECT fencing_renew('job-1', $held, '2 hours')"), '55000',
	'fencing_renew on a subscriber of fencing.lease is refused');

# Disabled: the subscriber issues again (it is being promoted).
query($sub, $db, 'ALTER SUBSCRIPTION lsub DISABLE');
$deadline = time + 30;
sleep 0.2 while time < $deadline
  && query($pub, $db, q{SELECT count(*) FROM pg_stat_replication WHERE application_name = 'lsub'}) ne '0';
my $after = query($sub, $db, q{SELECT fencing_acquire('job-3', 'sub-D', '1 hour')});
ok($after ne '', "fencing_acquire once the subscription is disabled: $after");

done_testing();
