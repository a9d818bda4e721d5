# A statement that spans several replicasets is not atomic on Picodata: the coordinator sends each
# replicaset's master its part, and each part commits on its own. When one master is stopped, a
# Picodata coordinator first waits for it (a dead master stalls the tier, up to the statement's
# deadline: 3 s in this emulated cluster), then sends the parts to the live masters and fails. So
# picoroute, when its map shows the master stopped, does not send a keyless UPDATE or DELETE (its
# error says why, and that nothing was applied); when its map does not know yet, the statement is
# sent, fails with "dql timeout exceeded", and its error says it may have been applied on some
# replicasets, and it was: the running replicaset's rows changed, the stopped one's did not.
# Runs on every emulated version.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_table emu_private_psql start_emulator start_routing_node create_servers
  create_foreign_tables wait_for coordinator_session emu_locate);

$ENV{PICOEMU_QUERY_TIMEOUT} = 3;  # the emulated instances' deadline (Picodata: 360 s)
start_emulator();
emu_table('users', 'id int8, name text, v int8', rows => 60);

my $node = start_routing_node(name => 'partial_write');
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', 'pico');

# The keys of each replicaset, as the emulator places them (its bucket rule), and as its masters
# store them.
my %keys;
my @located = emu_locate('users', map { "[$_]" } 1 .. 60);
push @{ $keys{ $located[ $_ - 1 ]{replicaset} } }, $_ for 1 .. 60;
my @k1 = @{ $keys{default_1} // [] };
my @k2 = @{ $keys{default_2} // [] };
ok(@k1 > 5 && @k2 > 5, sprintf('the 60 keys lie on both replicasets (%d and %d)', scalar @k1, scalar @k2));
sub stored {
    my ($master, $where) = @_;
    return emu_private_psql($master,
        "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM _picoemu_local.users WHERE $where");
}
sub list { return join(',', sort { $a <=> $b } @_); }
is(stored('default_1_1', 'true'), list(@k1), 'default_1 stores its keys');
is(stored('default_2_1', 'true'), list(@k2), 'default_2 stores its keys');

# ---- both masters running: the whole statement applies ------------------------------------------
my ($ret, $out, $err) = $node->psql('postgres', "UPDATE users SET v = v + 1000");
is($ret, 0, 'a keyless UPDATE with every master running succeeds') or diag($err);
is($node->safe_psql('postgres', 'SELECT count(*) FROM users WHERE v >= 1000'), '60', 'and changes all 60 rows');

# ---- one master stopped, and the map shows it: not sent -------------------------------------------
emu('stop', 'default_2_1');
ok(wait_for($node, "SELECT NOT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
    'the map shows default_2_1 stopped');
($ret, $out, $err) = $node->psql('postgres', "SET picoroute.failover_wait = '1s'; UPDATE users SET name = 'partial'");
isnt($ret, 0, 'a keyless UPDATE fails while default_2 has no running master');
like($err, qr/did not send the statement: replicaset default_2 of tier default has no online master/,
    'picoroute did not send it: a coordinator would wait for that master');
like($err, qr/not applied\. No row of this statement was committed on Picodata\./, 'and says nothing was applied');
is(stored('default_1_1', "name = 'partial'"), '', 'nothing was');

# ---- one master stopped, the map a step behind: sent, partly applied --------------------------------
emu('start', 'default_2_1');
ok(wait_for($node, "SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
    'default_2_1 is back in the map');
$node->safe_psql('postgres', "ALTER SYSTEM SET picoroute.refresh_interval = '1h'; SELECT pg_reload_conf()");
sleep 1;
emu('stop', 'default_2_1');
is($node->safe_psql('postgres', "SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'"), 't',
    'the map has not seen the stop');
# A session whose keyless statements go to default_1_1 (a running coordinator).
my $session = coordinator_session($node, emu_json('status', '--json')->{instances}[0]{pgproto_address},
    "UPDATE users SET name = 'partial'");
ok($session, "a session whose coordinator is default_1_1");
$err = $session->("UPDATE users SET name = 'partial';");
like($err, qr/ERROR:.*dql timeout exceeded/s, 'a keyless UPDATE sent meanwhile fails after the coordinator waited for the stopped master');
like($err, qr/may have been applied/, 'the error says it may have been applied');
unlike($err, qr/was not applied there|No row of this statement was committed/, 'and does not say it was not applied');
$err = $session->('DELETE FROM users WHERE id > 40;');
like($err, qr/ERROR:.*may have been applied/s, 'a keyless DELETE fails the same way, saying the same');
is(stored('default_1_1', "name = 'partial'"), list(grep { $_ <= 40 } @k1),
    "default_1 applied its part: its rows are updated, but those its part of the DELETE removed");
is(stored('default_1_1', 'id > 40'), '', 'default_1 applied its part of the DELETE');
emu('start', 'default_2_1');
$node->safe_psql('postgres', "ALTER SYSTEM RESET picoroute.refresh_interval; SELECT pg_reload_conf(); SELECT picoroute_refresh()");
ok(wait_for($node, "SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
    'default_2_1 is back');

# Read back through picoroute: exactly default_1's rows changed, default_2's are as they were.
is($node->safe_psql('postgres', "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM users WHERE name = 'partial'"),
    list(grep { $_ <= 40 } @k1), "the rows named 'partial' are default_1's, and only they");
is($node->safe_psql('postgres', "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM users WHERE name <> 'partial'"),
    list(@k2), "default_2's rows kept their names");
is($node->safe_psql('postgres', "SELECT coalesce(string_agg(id::text, ',' ORDER BY id), '') FROM users WHERE id > 40"),
    list(grep { $_ > 40 } @k2), "of the keys above 40, only default_2's are left");
is(stored('default_2_1', 'true'), list(@k2), 'default_2 stores all its keys, unchanged');

$node->stop;
done_testing();
