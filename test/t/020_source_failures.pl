# Failure paths of the poll source: a server without _pico_bucket, a missing catalog grant, an
# unreachable configured host (fallback to known instances), settings reload, and the worker
# stopped or crashed.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_json start_emulator start_picoroute_node wait_for);

start_emulator(replicasets => 2, replication_factor => 1);

# A server older than 25.5.2: no _pico_bucket. Buckets stay empty, the rest is right.
emu('drop-bucket-function');
# restart_after_crash: the crash test below needs the postmaster to restart (TAP nodes disable it).
my $node = start_picoroute_node(name => 'failures', extra_conf => "restart_after_crash = on\n");
ok(wait_for($node, 'SELECT instances = 2 AND replicasets = 2 FROM picoroute_status'),
    'instances and replicasets load without _pico_bucket');
is($node->safe_psql('postgres', 'SELECT bucket_ranges, last_error IS NULL FROM picoroute_status'),
    '0|t', 'no bucket ranges, and no error');
like($node->safe_psql('postgres', 'SELECT last_warning FROM picoroute_status'),
    qr/bucket map of tier 'default' not read from .*_pico_bucket/,
    'the status explains why the bucket map is empty');
is($node->safe_psql('postgres', "SELECT picoroute_master('default', 1) IS NULL"), 't',
    'an unmapped bucket has no master (route to any instance)');
is($node->safe_psql('postgres', 'SELECT bucket_count, buckets_mapped FROM picoroute_tiers'),
    '3000|0', 'the tier is known, none of its buckets mapped');

emu('restore-bucket-function');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
is($node->safe_psql('postgres', 'SELECT bucket_ranges, last_warning IS NULL FROM picoroute_status'),
    '2|t', 'bucket map loaded once _pico_bucket exists');

# No read right on _pico_replicaset: the refresh fails naming the table and the grant; the last
# good map stays.
emu('revoke', '_pico_replicaset');
my ($ret, $stdout, $stderr) = $node->psql('postgres', 'SELECT picoroute_refresh(10000)');
isnt($ret, 0, 'picoroute_refresh fails without the grant');
like($stderr, qr/_pico_replicaset/, 'the error names the table');
like($node->safe_psql('postgres', 'SELECT last_error FROM picoroute_status'),
    qr/cannot read _pico_replicaset .* as user "picoroute".*GRANT READ ON TABLE _pico_replicaset TO "picoroute"/,
    'status names the table and the grant needed');
is($node->safe_psql('postgres', 'SELECT bucket_ranges, replicasets FROM picoroute_status'),
    '2|2', 'the last good map stays in place');
emu('grant', '_pico_replicaset');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
is($node->safe_psql('postgres', 'SELECT last_error IS NULL FROM picoroute_status'), 't',
    'the error clears once the grant is back');

# The configured hosts are unreachable: the worker falls back to the instances it knows.
my $good = $node->safe_psql('postgres', 'SHOW picoroute.conninfo');
$node->safe_psql('postgres',
    "ALTER SYSTEM SET picoroute.conninfo = 'host=127.0.0.1 port=1 dbname=picodata user=picoroute password=picoroute'");
$node->reload;
ok(wait_for($node, "SELECT count(*) = 1 FROM pg_settings WHERE name = 'picoroute.conninfo' AND setting LIKE '%port=1 %'"),
    'the new conninfo is loaded (SIGHUP)');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(20000)');
my $known = join('|', sort split /\n/, $node->safe_psql('postgres', 'SELECT address FROM picoroute_instances'));
my $source = $node->safe_psql('postgres', 'SELECT source_instance FROM picoroute_status');
ok(index("|$known|", "|$source|") >= 0, "with the configured host down the worker reads from a known instance ($source)");
is($node->safe_psql('postgres', 'SELECT last_error IS NULL, instances FROM picoroute_status'), 't|2',
    'refreshes keep succeeding through the fallback');
like($node->safe_psql('postgres', 'SELECT last_warning FROM picoroute_status'),
    qr/configured hosts unreachable .*reading from known instance/,
    'the status says the configured hosts are unreachable');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET picoroute.conninfo');
$node->reload;

# A worker terminated on its own comes back; so does one that crashed.
my $pid = $node->safe_psql('postgres', 'SELECT worker_pid FROM picoroute_status');
# pg_terminate_backend() reaches it (the worker is in the process array, connected to no database).
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)"), 't', 'pg_terminate_backend stops the worker');
ok(wait_for($node, "SELECT worker_pid IS NOT NULL AND worker_pid <> $pid AND last_error IS NULL FROM picoroute_status", 't', 30),
    'a terminated worker is started again');
$pid = $node->safe_psql('postgres', 'SELECT worker_pid FROM picoroute_status');
kill 'KILL', $pid;
ok(wait_for($node, "SELECT worker_pid IS NOT NULL AND worker_pid <> $pid AND generation > 0 AND instances = 2 FROM picoroute_status", 't', 60),
    'after a crash the worker is restarted and the map rebuilt');
is($node->safe_psql('postgres', "SELECT picoroute_master('default', 1) IS NOT NULL"), 't',
    'lookups work again after the crash');

# picoroute_refresh with no worker reachable in time: a clear timeout error.
($ret, $stdout, $stderr) = $node->psql('postgres', 'SELECT picoroute_refresh(0)');
isnt($ret, 0, 'a zero timeout cannot be met');
like($stderr, qr/refresh|timed out|timeout/i, 'the error says the refresh did not finish in time');

$node->stop;

# A topology larger than the configured capacity: reported in the status and the log, and no
# partial map is ever published.
my $small = start_picoroute_node(name => 'small', extra_conf => "picoroute.max_bucket_ranges = 1\n");
ok(wait_for($small, 'SELECT capacity_exceeded FROM picoroute_status'),
    'capacity overflow reported in picoroute_status');
like($small->safe_psql('postgres', 'SELECT last_error FROM picoroute_status'),
    qr/picoroute\.max_bucket_ranges is 1 but the topology has 2 bucket ranges.*raise picoroute\.max_bucket_ranges/,
    'the error names the setting and the size needed');
is($small->safe_psql('postgres', 'SELECT generation, bucket_ranges, instances FROM picoroute_status'),
    '0|0|0', 'nothing was published: no truncated map');
ok($small->log_contains('picoroute: topology refresh failed: picoroute.max_bucket_ranges is 1'),
    'the overflow is logged');
$small->stop;
done_testing();
