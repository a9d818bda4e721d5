# A dead master stalls its tier: Picodata's coordinator sends a statement to the storages through
# Lua only once every master of the tier is connected, waiting up to the statement's deadline
# (360 s; the emulator's is shortened to 3 s here, PICOEMU_QUERY_TIMEOUT), then fails with
# "dql timeout exceeded" after the live masters got it. Only the local path of 26.1.1+ (a statement
# whose buckets all belong to the replicaset of the master it reaches) does not wait.
#
# picoroute, while its map shows a master of the tier offline: a keyed statement it sends to its
# owner's master runs at once on versions with the local path; any statement that would wait in
# Picodata waits in picoroute instead (picoroute.failover_wait), is never sent, and fails with its
# true cause, applied nowhere. When picoroute's map does not know yet (a stale map), the statement
# is sent, waits in Picodata and fails with "dql timeout exceeded": a write's outcome is then
# unknown, and the error says it may have been applied (it was, on the live replicaset).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use Picoroute::TestCluster
  qw(emu emu_json emu_table emu_private_psql start_emulator start_routing_node create_servers
  create_foreign_tables wait_for picodata_has coordinator_session emu_locate);

$ENV{PICOEMU_QUERY_TIMEOUT} = 3;  # the emulated instances' deadline (Picodata: 360 s)
start_emulator(replication_factor => 1);
emu_table('users', 'id int8, name text, v int8', rows => 60);
my $node = start_routing_node(name => 'dead_master', refresh_interval => '200ms');
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', 'pico');
my $local = picodata_has('local_execution');
note('the emulated version ' . ($local ? 'has' : 'has no') . ' local execution path');

my %keys;
my @located = emu_locate('users', map { "[$_]" } 1 .. 60);
push @{ $keys{ $located[ $_ - 1 ]{replicaset} } }, $_ for 1 .. 60;
my ($k1, $k2) = ($keys{default_1}[0], $keys{default_2}[0]);
sub stored {
    my ($master, $where) = @_;
    return emu_private_psql($master, "SELECT count(*) FROM _picoemu_local.users WHERE $where");
}
# Runs `sql` after `setup`; returns (exit code, stdout, stderr, seconds).
sub timed {
    my ($sql, $setup) = @_;
    my $t0 = time;
    my ($ret, $out, $err) = $node->psql('postgres', ($setup // '') . $sql);
    return ($ret, $out, $err, time - $t0);
}

emu('stop', 'default_2_1');
ok(wait_for($node, "SELECT NOT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
   'the map shows the master of default_2 offline');
my $wait = "SET picoroute.failover_wait = '2s';";

# ---- a keyed statement to the live owner's master -------------------------------------------
my ($ret, $out, $err, $took) = timed("SELECT name FROM users WHERE id = $k1", $wait);
if ($local) {
    is($ret, 0, 'a point read of the live replicaset runs (the local path does not wait)') or diag($err);
    is($out, "name_$k1", 'and returns its row');
    cmp_ok($took, '<', 1.5, sprintf('at once (%.1f s)', $took));
} else {
    isnt($ret, 0, 'without a local path, a point read of the live replicaset would wait: not sent');
    like($err, qr/did not send the statement: replicaset default_2 of tier default has no online master/,
        'the error gives the true cause');
    cmp_ok($took, '<', 10, sprintf('after picoroute.failover_wait (%.1f s)', $took));
}
($ret, $out, $err, $took) = timed("UPDATE users SET v = -1 WHERE id = $k1", $wait);
if ($local) {
    is($ret, 0, 'a keyed UPDATE of the live replicaset runs') or diag($err);
    is(stored('default_1_1', "id = $k1 AND v = -1"), '1', 'and is applied');
    cmp_ok($took, '<', 1.5, sprintf('at once (%.1f s)', $took));
} else {
    isnt($ret, 0, 'without a local path, a keyed UPDATE of the live replicaset is not sent');
    like($err, qr/was not sent anywhere, so it was not applied\. No row of this statement was committed/,
        'and the error says it was not applied');
    is(stored('default_1_1', "id = $k1 AND v = -1"), '0', 'it was not');
}

# ---- statements that need a coordinator ------------------------------------------------------
($ret, $out, $err, $took) = timed('SELECT count(*) FROM users', $wait);
isnt($ret, 0, 'a keyless read is not sent while a master of the tier is offline');
like($err, qr/did not send the statement: replicaset default_2 of tier default has no online master/,
    'the error names the replicaset without a master');
like($err, qr/waits for that up to the statement's deadline/, 'and why that stops the statement');
unlike($err, qr/could not reach|dql timeout/, 'not an unreachable instance, not a timeout');
cmp_ok($took, '>=', 1.5, sprintf('after picoroute.failover_wait (%.1f s) ...', $took));
cmp_ok($took, '<', 10, '... not after Picodata\'s deadline');
my $before = stored('default_1_1', "name = 'keyless'");
($ret, $out, $err) = timed("UPDATE users SET name = 'keyless'", $wait);
isnt($ret, 0, 'a keyless UPDATE is not sent either');
like($err, qr/was not sent anywhere, so it was not applied\. No row of this statement was committed on Picodata\./,
    'its error says nothing was applied');
is(stored('default_1_1', "name = 'keyless'"), $before, 'and nothing was');

# ---- a stale map: the statement is sent and waits in Picodata ----------------------------------
emu('start', 'default_2_1');
ok(wait_for($node, "SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
   'default_2_1 is back in the map');
$node->safe_psql('postgres', "ALTER SYSTEM SET picoroute.refresh_interval = '1h'; SELECT pg_reload_conf()");
sleep 1;
emu('stop', 'default_2_1');
is($node->safe_psql('postgres', "SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'"),
   't', 'the map has not seen the stop');
# A session whose keyless statements go to default_1_1 (a running coordinator).
my $session = coordinator_session($node, emu_json('status', '--json')->{instances}[0]{pgproto_address},
    "UPDATE users SET name = 'stale'");
ok($session, 'a session whose coordinator is default_1_1');
my $t0 = time;
$err = $session->("UPDATE users SET name = 'stale';");
$took = time - $t0;
like($err, qr/ERROR:.*dql timeout exceeded/s, "a keyless UPDATE sent meanwhile fails with Picodata's dql timeout");
cmp_ok($took, '>=', 2.5, sprintf('after the instance waited for the master (%.1f s)', $took));
like($err, qr/may have been applied/, 'its error says it may have been applied');
unlike($err, qr/not applied there|No row of this statement was committed|refused the statement before running/,
    'and claims neither that it was not applied nor that it was refused before running');
is(stored('default_1_1', "name = 'stale'"), scalar(@{ $keys{default_1} }),
   'it was applied on the live replicaset');
# A keyed write sent to an instance that does not own its key (here through picoroute_exec) is
# dispatched too: its outcome is unknown after the timeout, and the error says so.
my $b1 = emu_json('locate', 'users', '--key', "[$k1]")->{bucket_id};
($ret, $out, $err) = timed(qq{SELECT * FROM picoroute_exec('default', $b1,
    'UPDATE "users" SET "v" = 7 WHERE "id" = $k2') AS t(x int)});
isnt($ret, 0, 'a keyed UPDATE sent to the wrong instance meanwhile fails');
like($err, qr/dql timeout exceeded/, 'with the dql timeout');
like($err, qr/after it was sent on to a storage: it may have been applied/,
    'its error says it may have been applied');
unlike($err, qr/not applied there|No row of this statement was committed|refused the statement before running/,
    'not that it was not applied');
if ($local) {
    ($ret, $out, $err, $took) = timed("UPDATE users SET v = -2 WHERE id = $k1");
    is($ret, 0, 'a keyed UPDATE to the live owner still runs at once') or diag($err);
    cmp_ok($took, '<', 1.5, sprintf('(%.1f s)', $took));
}
emu('start', 'default_2_1');
$node->safe_psql('postgres', "ALTER SYSTEM RESET picoroute.refresh_interval; SELECT pg_reload_conf()");
is(stored('default_2_1', "name = 'stale'"), '0', "default_2's rows were not changed");

$node->stop;
done_testing();
