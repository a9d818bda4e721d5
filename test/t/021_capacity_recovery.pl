# A topology over capacity does not wedge the worker: at the first poll whose catalog fits again it
# publishes, capacity_exceeded clears, and later changes (a master switch) reach the map. The
# overflow used here is in tiers (picoroute.max_replicasets also bounds them): tiers are static in
# the worker's model, so a model that followed the over-capacity catalog kept the extra tiers and
# stayed over capacity after the catalog had shrunk back.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_json emu_private_psql start_emulator start_picoroute_node wait_for);

start_emulator(replicasets => 2, replication_factor => 2);

# Only the first instance is configured, so every poll reads the catalog that is changed below.
my $node = start_picoroute_node(
    name => 'capacity',
    conninfo => emu('conninfo', '--user', 'picoroute', '--instance', 'default_1_1'),
    refresh_interval => '300ms',
    extra_conf => "picoroute.max_replicasets = 3\n");
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2'),
    'map loaded: two ranges');
my $generation = $node->safe_psql('postgres', 'SELECT generation FROM picoroute_status');

# Three more tiers listed by the configured instance's catalog: four tiers, over a capacity of 3.
emu_private_psql('default_1_1', q{
ALTER VIEW public._pico_tier RENAME TO _pico_tier_real;
CREATE VIEW public._pico_tier AS SELECT * FROM public._pico_tier_real UNION ALL
  SELECT 'extra_' || g, 1::bigint, true, 0::bigint, 0::bigint, false, 0::bigint, false, 0::bigint,
         0::bigint FROM generate_series(1, 3) AS g;
GRANT SELECT ON public._pico_tier TO PUBLIC;
});
ok(wait_for($node, 'SELECT capacity_exceeded FROM picoroute_status', 't', 30), 'over capacity: reported');
like($node->safe_psql('postgres', 'SELECT last_error FROM picoroute_status'),
    qr/picoroute\.max_replicasets is 3 but the topology has 4 tiers/, 'naming the setting');
is($node->safe_psql('postgres', "SELECT generation = $generation FROM picoroute_status"), 't',
    'the map that fitted stays');

# The catalog fits again.
emu_private_psql('default_1_1', q{
DROP VIEW public._pico_tier;
ALTER VIEW public._pico_tier_real RENAME TO _pico_tier;
});
ok(wait_for($node, 'SELECT NOT capacity_exceeded AND last_error IS NULL FROM picoroute_status', 't', 20),
    'once the catalog fits again the worker leaves the over-capacity state by itself');
is($node->safe_psql('postgres', "SELECT string_agg(name, ',' ORDER BY name) FROM picoroute_tiers"),
    'default', 'the tiers of the over-capacity catalog are not kept');

# And it keeps following the catalog: a master switch is published.
my %master_of = map { $_->{name} => $_->{master} } @{ emu_json('status', '--json')->{replicasets} };
emu('switch-master', 'default_2');
my %after = map { $_->{name} => $_->{master} } @{ emu_json('status', '--json')->{replicasets} };
isnt($after{default_2}, $master_of{default_2}, 'the emulator switched the master of default_2');
ok(wait_for($node, "SELECT master_name = '$after{default_2}' FROM picoroute_replicasets "
      . "WHERE name = 'default_2'", 't', 20),
    'the master switch is published');

$node->stop;
done_testing();
