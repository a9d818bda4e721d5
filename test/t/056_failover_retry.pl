# Failover is a pause, not an error, for what can be sent again safely (picoroute.failover_wait):
# a write refused by a demoted master before it ran, and a write that could not be sent while its
# replicaset had no master, run on the new master once the map shows it; when no master comes in
# time, the error says what happened and that nothing was applied.
# Runs on every emulated version
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(sleep time);
use Picoroute::TestCluster
  qw(emu emu_json emu_table start_emulator start_routing_node create_servers create_foreign_tables
  wait_for);

start_emulator();
emu_table('users', 'id int8, name text, v int8', rows => 100);

# The worker refreshes only when woken: the map stays stale after each switch below until a
# statement's failure makes picoroute refresh it.
my $node = start_routing_node(name => 'failover_retry', admin => 1, refresh_interval => '1h');
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', 'pico');

sub master_of {
    my ($rs) = @_;
    return $node->safe_psql('postgres',
        "SELECT name FROM picoroute_instances WHERE replicaset_name = '$rs' AND is_master");
}
sub refreshes { return $node->safe_psql('postgres', 'SELECT refreshes FROM picoroute_status'); }
sub name_of { return $node->safe_psql('postgres', "SELECT name FROM users WHERE id = $_[0]"); }
sub key_of {
    my ($master) = @_;
    for my $id (1 .. 100) {
        return $id if emu_json('locate', 'users', '--key', "[$id]")->{master} eq $master;
    }
    die "no key on $master";
}
my ($k1, $k2) = (key_of('default_1_1'), key_of('default_2_1'));
is(name_of($k1), "name_$k1", 'a read before the switch');

# ---- a write refused by the demoted master runs on the new one ----------------------------------
emu('switch-master', 'default_1');
is(master_of('default_1'), 'default_1_1', 'the map is stale: it still names the old master');
my $before = refreshes();
my ($ret, $out, $err) = $node->psql('postgres',
    "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) UPDATE users SET name = 'after-switch' WHERE id = $k1");
is($ret, 0, 'a write the demoted master refused before running it is sent to the new master')
  or diag($err);
is($err, '', 'and the client sees no error');
like($out, qr/Sent Again: [1-9]/, 'EXPLAIN ANALYZE says it was sent again') or diag($out);
cmp_ok(refreshes(), '>', $before, 'picoroute refreshed the map for it');
is(master_of('default_1'), 'default_1_2', 'the map now names the new master');
is(name_of($k1), 'after-switch', 'the write is applied');
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE id = $k1"), '1', 'once');

# ---- a write that cannot be sent waits for the replicaset's new master ---------------------------
emu('stop', 'default_2_1');
my ($w_out, $w_err) = ('', '');
my $t0 = time;
my $writer = IPC::Run::start(
    [ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
      '-c', "SET picoroute.failover_wait = '60s'",
      '-c', "UPDATE users SET name = 'waited' WHERE id = $k2" ],
    '>', \$w_out, '2>', \$w_err, IPC::Run::timeout(120));
ok(wait_for($node, "SELECT NOT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
   'the map learns that the master is down');
sleep 1;
$writer->pump_nb;
ok($writer->pumpable, 'the write waits while replicaset default_2 has no master');
emu('switch-master', 'default_2');
$writer->finish;
my $waited = time - $t0;
is($?, 0, sprintf('it runs on the new master once the map shows it (after %.1f s)', $waited))
  or diag($w_err);
is($w_err, '', 'with no error');
is(master_of('default_2'), 'default_2_2', 'the map names the new master');
is(name_of($k2), 'waited', 'the write is applied');

# ---- no master within picoroute.failover_wait: a true error ---------------------------------------
emu('stop', 'default_2_2');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
ok(wait_for($node, "SELECT NOT is_online FROM picoroute_instances WHERE name = 'default_2_2'", 't', 30),
   'the map learns that the new master is down too');
$t0 = time;
($ret, $out, $err) = $node->psql('postgres',
    "SET picoroute.failover_wait = '1s'; UPDATE users SET name = 'lost' WHERE id = $k2");
my $took = time - $t0;
isnt($ret, 0, 'with no master in time the write fails');
# Sent to a coordinator, it would wait there for the missing master (a dead master stalls the
# tier's Picodata coordinators, up to 360 s): picoroute does not send it.
like($err, qr/did not send the statement: replicaset default_2 of tier default has no online master/,
     'the error gives the true cause');
like($err, qr/picoroute waited \d+ ms for the topology map to show a master \(picoroute\.failover_wait\)/,
     'and says how long picoroute waited');
like($err, qr/was not sent anywhere, so it was not applied\. No row of this statement was committed on Picodata\./,
     'and that nothing was applied');
cmp_ok($took, '<', 15, sprintf('within the bound (%.1f s)', $took));
($ret, $out, $err) = $node->psql('postgres',
    "SET picoroute.failover_wait = '1s'; SELECT name FROM users WHERE id = $k2");
isnt($ret, 0, 'a read of that replicaset fails the same way');
like($err, qr/picoroute waited \d+ ms/, 'saying so');
# A keyless UPDATE needs every replicaset: a Picodata coordinator would wait for the missing
# master, then apply it on the others only. picoroute does not send it, and says that nothing was
# applied.
($ret, $out, $err) = $node->psql('postgres', "SET picoroute.failover_wait = '1s'; UPDATE users SET v = 5");
isnt($ret, 0, 'a keyless UPDATE fails while a replicaset has no master');
like($err, qr/did not send the statement: replicaset default_2 of tier default has no online master/,
     'not sent, for that reason');
like($err, qr/not applied\. No row of this statement was committed on Picodata\./, 'its DETAIL says nothing was applied');
emu('start', 'default_2_2');
ok(wait_for($node, "SELECT name FROM users WHERE id = $k2", 'waited', 30),
   'the row is back with its master, unchanged');

$node->stop;
done_testing();
