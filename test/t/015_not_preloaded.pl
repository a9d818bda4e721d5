# Without shared_preload_libraries (the extension created while it was preloaded, the setting
# removed later) every SQL function and every use of a picoroute foreign table fails with the
# same clear error, and the backend stays alive: there is no shared map to read.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use Picoroute::TestCluster ();    # the PostgreSQL installation's pg_regress and binaries
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('not_preloaded');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'picoroute'
picoroute.source = 'push'
CONF
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION picoroute;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico;
CREATE FOREIGN TABLE ft (id bigint, v text) SERVER pico OPTIONS (sharding_key 'id');
SQL

$node->append_conf('postgresql.conf', "shared_preload_libraries = ''\n");
$node->restart;

my @statements = (
    "SELECT picoroute_master('default', 1)",
    "SELECT picoroute_bucket_id('default', 1)",
    "SELECT picoroute_bucket_id_with_count(3000, 1)",
    "SELECT picoroute_bucket_id_for_version('26.1.6', 3000, 1)",
    "SELECT * FROM picoroute_route('default', 1)",
    'SELECT * FROM picoroute_status',
    'SELECT * FROM picoroute_tiers',
    'SELECT picoroute_refresh(1000)',
    "SELECT picoroute_apply_events('[]')",
    "SELECT * FROM picoroute_exec('default', 1, 'SELECT 1') AS t(x int)",
    "SELECT * FROM picoroute_exec_all('default', 'SELECT 1') AS t(x int)",
    'SELECT * FROM picoroute_connections()',
    "SELECT picoroute_check_foreign_table('ft')",
    'SELECT * FROM ft WHERE id = 1',
    'SELECT count(*) FROM ft',
    "INSERT INTO ft VALUES (1, 'a')",
    'ANALYZE ft',
);
for my $sql (@statements) {
    my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql);
    isnt($ret, 0, "fails: $sql");
    like($stderr, qr/picoroute must be loaded via shared_preload_libraries/,
        "says the library must be preloaded: $sql");
    like($stderr, qr/HINT:  Add picoroute to shared_preload_libraries/, "with the hint: $sql");
    is($node->safe_psql('postgres', 'SELECT 1'), '1', "the server is still up after: $sql");
}

$node->stop;
done_testing();
