# Credentials do not follow an address that only picoroute_apply_events gave. A role granted nothing
# but EXECUTE on picoroute_apply_events publishes an instance at a loopback address where a fake
# server records every login; statements of another role routed there (a foreign table with a user
# mapping, picoroute_exec with the credentials of picoroute.conninfo) are refused before anything
# is sent while picoroute.allowed_hosts is empty, the default. Once allowed_hosts admits the
# address, they connect there as before.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(start_picoroute_node wait_for start_fake_instance fake_log);

my $fake = start_fake_instance('--refuse-login');
my $port = $fake->{port};

sub logins { return fake_log($fake); }

my $node = start_picoroute_node(
    name => 'pushed',
    conninfo => 'host=127.0.0.1 port=9 dbname=picodata user=picoroute password=conninfo-secret',
    extra_conf => "picoroute.source = 'push'\npicoroute.connect_timeout = '5s'\n");
$node->safe_psql('postgres', q{
CREATE ROLE pusher LOGIN;
GRANT EXECUTE ON FUNCTION picoroute_apply_events(jsonb) TO pusher;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'app', password 'mapping-secret');
CREATE FOREIGN TABLE users (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
});

# The unprivileged role puts the fake server in the map.
my ($ret, $stdout, $stderr) = $node->psql('postgres', qq{SELECT picoroute_apply_events('[
  {"op":"replace","map":"tier","name":"default","bucket_count":3000},
  {"op":"replace","map":"replicaset","replicaset_uuid":"r1","tier":"default","current_master_uuid":"i1"},
  {"op":"replace","map":"instance","instance_uuid":"i1","replicaset_uuid":"r1","current_state":"Online","address":"127.0.0.1:$port"},
  {"op":"replace","map":"bucket","tier":"default","bucket_id":{"start":1,"end":3000},"current_replicaset_uuid":"r1"}]')},
    extra_params => [ '-U', 'pusher' ]);
is($ret, 0, 'a role granted only picoroute_apply_events publishes an instance') or diag($stderr);
is($node->safe_psql('postgres', "SELECT picoroute_master('default', 1)"), "127.0.0.1:$port",
    'the map routes bucket 1 to the fake server');

# --- allowed_hosts empty (the default): refused before anything is sent --------------------------
($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM users WHERE id = 1");
isnt($ret, 0, 'a routed statement through a foreign table fails');
like($stderr, qr/ERROR:  42501: picoroute: refused to connect to Picodata instance 127\.0\.0\.1:$port/,
    'refused with 42501, naming the instance');
like($stderr, qr/DETAIL:  .*not reported by a catalog the worker read \(picoroute_apply_events gave it\).*picoroute\.allowed_hosts/s,
    'the detail says the address came from picoroute_apply_events and names allowed_hosts');
like($stderr, qr/HINT:  .*picoroute\.allowed_hosts/, 'the hint names allowed_hosts');
($ret, $stdout, $stderr) = $node->psql('postgres',
    "SELECT * FROM picoroute_exec('default', 1, 'SELECT 1') AS t(x int)");
like($stderr, qr/refused to connect to Picodata instance 127\.0\.0\.1:$port/,
    'picoroute_exec (credentials of picoroute.conninfo) is refused too');
sleep(1);
is(scalar @{ logins() }, 0, 'the fake server saw no login at all: no user, no password');

# --- allowed_hosts admits the address: connections go there as before ---------------------------
$node->safe_psql('postgres', "ALTER SYSTEM SET picoroute.allowed_hosts = '127.0.0.1'");
$node->reload;
ok(wait_for($node, "SELECT current_setting('picoroute.allowed_hosts') = '127.0.0.1'"), 'allowed_hosts loaded');
($ret, $stdout, $stderr) = $node->psql('postgres', 'SELECT * FROM users WHERE id = 1');
like($stderr, qr/authentication failed for user "app" at Picodata instance 127\.0\.0\.1:$port/,
    'the foreign table connects to the admitted address (the fake server refuses the login)');
($ret, $stdout, $stderr) = $node->psql('postgres',
    "SELECT * FROM picoroute_exec('default', 1, 'SELECT 1') AS t(x int)");
like($stderr, qr/authentication failed for user "picoroute" at Picodata instance 127\.0\.0\.1:$port/,
    'so does picoroute_exec');
ok(wait_for($node, 'SELECT 1', '1', 5), 'server still answers');
my %passwords = map { ($_->{user} // '') => ($_->{password} // '') } @{ logins() };
is($passwords{app}, 'mapping-secret', 'the user mapping logged in there');
is($passwords{picoroute}, 'conninfo-secret', 'and the credentials of picoroute.conninfo');

# '*' admits any address, as a list that admits it does.
$node->safe_psql('postgres', "ALTER SYSTEM SET picoroute.allowed_hosts = '*'");
$node->reload;
ok(wait_for($node, "SELECT current_setting('picoroute.allowed_hosts') = '*'"), 'allowed_hosts = * loaded');
($ret, $stdout, $stderr) = $node->psql('postgres',
    "SELECT * FROM picoroute_exec('default', 1, 'SELECT 1') AS t(x int)");
like($stderr, qr/authentication failed for user "picoroute"/, "with '*' the connection goes there too");

$node->stop;
done_testing();
