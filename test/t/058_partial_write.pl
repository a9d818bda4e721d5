# A statement that spans several replicasets is not atomic on Picodata: the coordinator sends each
# replicaset's master its part, and each part commits on its own. When one master is stopped, a
# keyless UPDATE or DELETE through picoroute fails with an error that says it may have been applied
# on some replicasets, and it was: the running replicaset's rows changed, the stopped one's did not.
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
  create_foreign_tables wait_for);

start_emulator();
emu_table('users', 'id int8, name text, v int8', rows => 60);

my $node = start_routing_node(name => 'partial_write');
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', 'pico');

# The keys of each replicaset, as the emulator places them (its bucket rule), and as its masters
# store them.
my %keys;
push @{ $keys{ emu_json('locate', 'users', '--key', "[$_]")->{replicaset} } }, $_ for 1 .. 60;
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

# ---- one master stopped: the running replicaset's part applies, the error says it may have -------
emu('stop', 'default_2_1');
ok(wait_for($node, "SELECT NOT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
    'the map shows default_2_1 stopped');
($ret, $out, $err) = $node->psql('postgres', "UPDATE users SET name = 'partial'");
isnt($ret, 0, 'a keyless UPDATE fails while default_2 has no running master');
like($err, qr/spans several replicasets, and Picodata does not apply such a statement atomically: it may have been applied on some of them\./,
    'the error says it may have been applied on some replicasets');
unlike($err, qr/was not applied there|No row of this statement was committed/, 'and does not say it was not applied');
($ret, $out, $err) = $node->psql('postgres', 'DELETE FROM users WHERE id > 40');
isnt($ret, 0, 'a keyless DELETE fails the same way');
like($err, qr/may have been applied on some of them\./, 'saying the same');
is(stored('default_1_1', "name = 'partial'"), list(grep { $_ <= 40 } @k1),
    "default_1 applied its part: its rows are updated, but those its part of the DELETE removed");
is(stored('default_1_1', 'id > 40'), '', 'default_1 applied its part of the DELETE');
emu('start', 'default_2_1');
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
