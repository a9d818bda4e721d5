# A retried statement finds its tier again by name after the refresh, not by its index in the old
# map: tiers are sorted by name, so a tier added meanwhile with a name that sorts first shifts the
# index of the statement's tier onto the new one.
#
# No emulator: the node feeds its own map (picoroute.source = 'push') and is itself the one
# reachable "instance" (a plain SELECT on its TCP port). The map first sends tier m's buckets to a
# master that refuses connections; picoroute_exec fails to connect, wakes the worker and waits for a
# refresh (push mode: the wait runs to its bound). During that wait a second session publishes
# tier a (its buckets on another refusing master) and gives tier m's buckets to the node. The
# retry must go to the node; with the tier taken by index it went to tier a's master and failed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
# Only for its set-up of PostgreSQL's TAP modules outside a source tree: no emulator here, so
# this file uses no fixed port.
use Picoroute::TestCluster ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(sleep time);

my $node = PostgreSQL::Test::Cluster->new('tier_shift');
$node->init;
my $port = $node->port;
$node->append_conf('postgresql.conf', <<"CONF");
shared_preload_libraries = 'picoroute'
listen_addresses = '127.0.0.1'
picoroute.source = 'push'
picoroute.conninfo = 'dbname=postgres'
picoroute.connect_timeout = '5s'
# The map is pushed (picoroute_apply_events): its addresses get connections only when admitted.
picoroute.allowed_hosts = '127.0.0.1'
CONF
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION picoroute');

# Ports 1 and 2 of the loopback refuse connections at once.
$node->safe_psql('postgres', q{SELECT picoroute_apply_events('[
  {"op":"replace","map":"tier","name":"m","bucket_count":10},
  {"op":"replace","map":"replicaset","replicaset_uuid":"m-r1","tier":"m","current_master_uuid":"m-i1"},
  {"op":"replace","map":"instance","instance_uuid":"m-i1","replicaset_uuid":"m-r1","current_state":"Online","address":"127.0.0.1:1"},
  {"op":"replace","map":"bucket","tier":"m","bucket_id":{"start":1,"end":10},"current_replicaset_uuid":"m-r1"}]')});
is($node->safe_psql('postgres', "SELECT picoroute_master('m', 1)"), '127.0.0.1:1',
    'tier m: bucket 1 on a master that refuses connections');

# Session A: the statement, whose first attempt fails and whose retry waits for a refresh.
my ($out, $err) = ('', '');
my $reader = IPC::Run::start(
    [ 'psql', '-X', '-At', '-d', $node->connstr('postgres') . ' application_name=tier_shift',
      '-c', "SELECT * FROM picoroute_exec('m', 1, 'SELECT 42') AS t(x int)" ],
    '>', \$out, '2>', \$err);

# Session B: once A waits for the refresh, tier a appears (sorting before m) and tier m's buckets
# move to the node itself.
my $deadline = time() + 10;
my $waiting = 0;
while (time() < $deadline) {
    $waiting = $node->safe_psql('postgres',
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tier_shift' "
          . "AND wait_event_type = 'Extension'");
    last if $waiting;
    sleep(0.02);
}
ok($waiting, 'the statement waits for a refresh after its failed attempt');
$node->safe_psql('postgres', qq{SELECT picoroute_apply_events('[
  {"op":"replace","map":"tier","name":"a","bucket_count":10},
  {"op":"replace","map":"replicaset","replicaset_uuid":"a-r1","tier":"a","current_master_uuid":"a-i1"},
  {"op":"replace","map":"instance","instance_uuid":"a-i1","replicaset_uuid":"a-r1","current_state":"Online","address":"127.0.0.1:2"},
  {"op":"replace","map":"bucket","tier":"a","bucket_id":{"start":1,"end":10},"current_replicaset_uuid":"a-r1"},
  {"op":"replace","map":"replicaset","replicaset_uuid":"m-r2","tier":"m","current_master_uuid":"m-i2"},
  {"op":"replace","map":"instance","instance_uuid":"m-i2","replicaset_uuid":"m-r2","current_state":"Online","address":"127.0.0.1:$port"},
  {"op":"replace","map":"bucket","tier":"m","bucket_id":{"start":1,"end":10},"current_replicaset_uuid":"m-r2"}]')});
is($node->safe_psql('postgres', "SELECT string_agg(name, ',' ORDER BY name) FROM picoroute_tiers"),
    'a,m', 'tier a now sorts before tier m');

$reader->finish;
chomp $out;
is($out, '42', 'the retry ran on the new owner in tier m')
  or diag("stderr: $err");
unlike($err, qr/127\.0\.0\.1:2/, 'nothing was sent to the master of tier a');

$node->stop;
done_testing();
