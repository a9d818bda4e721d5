# The worker and the map stay live, and credentials go only where they belong: a poll after each
# of a series of moves publishes every bucket the catalog lists; the worker goes back to the
# configured host when it answers again; picoroute.allowed_hosts restricts the worker's fallback
# and the routing connections; a failed login is reported as such and does not make every
# statement wake the worker; a topology over capacity recovers by itself once it fits again.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use Picoroute::TestCluster qw(emu emu_json start_emulator start_picoroute_node wait_for);

start_emulator(replicasets => 3, replication_factor => 1);
emu('create-table', 'users', '--columns', 'id int8, name text');
emu('load', 'users', '--rows', '50');
my %port_of = map { $_->{name} => $_->{port} } @{ emu_json('status', '--json')->{instances} };
my $configured = "127.0.0.1:$port_of{default_1_1}";

# Only the first instance is configured; the others are reached as known instances.
my $node = start_picoroute_node(
    name => 'live',
    conninfo => emu('conninfo', '--user', 'picoroute', '--instance', 'default_1_1'),
    refresh_interval => '1s');
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '3'),
    'map loaded: three ranges');

# --- A poll after a move publishes every bucket the catalog lists --------------------------------
# Each move cuts the top (or the bottom) off a range, so the changed range overlaps a known one
# after the ranges listed before it were applied: that used to clear the tier mid-refresh.
sub catalog_ranges {
    my $json = emu('psql', 'default_1_1', '--', '-XAtc', "SELECT json_array_length(_pico_bucket('default'))");
    return $json + 0;
}
my @moves = (
    [ 1901, 2000, 'default_3' ], [ 1801, 1900, 'default_3' ], [ 901,  1000, 'default_2' ],
    [ 2001, 2100, 'default_2' ], [ 1,    50,   'default_3' ], [ 951,  1000, 'default_1' ],
    [ 1701, 1800, 'default_1' ], [ 2901, 3000, 'default_1' ]);
my ($complete, $same_ranges) = (0, 0);
for my $move (@moves) {
    emu('move', 'default', @$move);
    $node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
    my ($mapped, $ranges) = split /\|/, $node->safe_psql('postgres',
        "SELECT sum(bucket_id_end - bucket_id_start + 1), count(*) FROM picoroute_buckets WHERE tier = 'default'");
    $complete++ if $mapped == 3000;
    $same_ranges++ if $ranges == catalog_ranges();
    diag("after move @$move: $mapped buckets in $ranges ranges") if $mapped != 3000;
}
is($complete, scalar @moves, 'after every move the refresh published all 3000 buckets');
is($same_ranges, scalar @moves, 'and exactly the ranges the catalog lists');

# --- Back to the configured host when it answers again --------------------------------------------
emu('stop', 'default_1_1');
ok(wait_for($node, "SELECT source_instance <> '$configured' AND last_warning LIKE 'configured hosts unreachable%' FROM picoroute_status", 't', 30),
    'with the configured host down the worker reads from a known instance');
emu('start', 'default_1_1');
my $t0 = time();
ok(wait_for($node, "SELECT source_instance = '$configured' AND last_warning IS NULL AND last_error IS NULL FROM picoroute_status", 't', 30),
    'the worker goes back to the configured host once it answers, and the warning clears');
diag(sprintf('back on the configured host after %.1f s', time() - $t0));

# --- picoroute.allowed_hosts: the worker's fallback and the routing connections ------------------
$node->safe_psql('postgres', "ALTER SYSTEM SET picoroute.allowed_hosts = 'pico.example, 10.0.0.0/8'");
$node->reload;
ok(wait_for($node, "SELECT current_setting('picoroute.allowed_hosts') = 'pico.example, 10.0.0.0/8'"), 'allowed_hosts loaded');
my ($ret, $stdout, $stderr) = $node->psql('postgres',
    "SELECT * FROM picoroute_exec('default', 1000, 'SELECT 1') AS t(x int)");
isnt($ret, 0, 'picoroute_exec refuses an instance outside allowed_hosts');
like($stderr, qr/refused to connect to Picodata instance 127\.0\.0\.1:\d+.*not in picoroute\.allowed_hosts/s,
    'the refusal names the instance and the setting');
emu('stop', 'default_1_1');
ok(wait_for($node, "SELECT last_error LIKE '%not in picoroute.allowed_hosts%' FROM picoroute_status", 't', 30),
    'the worker does not fall back to known instances outside allowed_hosts');
like($node->safe_psql('postgres', 'SELECT last_error FROM picoroute_status'),
    qr/cannot connect to any Picodata instance .*address 127\.0\.0\.1:\d+ is not in picoroute\.allowed_hosts: not tried/,
    'last_error says which instances were not tried and why');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET picoroute.allowed_hosts');
$node->reload;
emu('start', 'default_1_1');
ok(wait_for($node, "SELECT last_error IS NULL AND source_instance = '$configured' FROM picoroute_status", 't', 30),
    'refreshes succeed again');

# --- A failed login is an authentication error and does not wake the worker ----------------------
$node->safe_psql('postgres', q{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'wrong');
CREATE FOREIGN TABLE users (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
});
($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM users WHERE id = 1");
like($stderr, qr/ERROR:  28P01: picoroute: authentication failed for user "picoroute" at Picodata instance 127\.0\.0\.1:\d+/,
    'a wrong password is reported as a failed login, with SQLSTATE 28P01');
unlike($stderr, qr/could not reach/, 'not as an unreachable instance');
my $before = $node->safe_psql('postgres', 'SELECT refreshes FROM picoroute_status');
$t0 = time();
my $script = join('', map { "SELECT * FROM users WHERE id = $_;\n" } 1 .. 60);
($ret, $stdout, $stderr) = $node->psql('postgres', $script, on_error_stop => 0);
my $elapsed = time() - $t0;
my $failed = () = $stderr =~ /ERROR:  picoroute: authentication failed/g;
is($failed, 60, 'every statement failed its login');
my $after = $node->safe_psql('postgres', 'SELECT refreshes FROM picoroute_status');
my $refreshes = $after - $before;
diag(sprintf('%d refreshes during %d failed logins in %.1f s (refresh_interval 1s)', $refreshes, $failed, $elapsed));
cmp_ok($refreshes, '<=', int($elapsed) + 3, 'failed logins do not make the worker refresh beyond its interval');

# A working mapping still works.
$node->safe_psql('postgres', "ALTER USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (SET password 'picoroute')");
is($node->safe_psql('postgres', 'SELECT name FROM users WHERE id = 7'), 'name_7', 'with the right password the row comes back');
$node->stop;

# --- A topology over capacity recovers by itself once it fits again ------------------------------
my $ranges_now = catalog_ranges();
my $small = start_picoroute_node(name => 'small', refresh_interval => '300ms',
    extra_conf => "picoroute.max_bucket_ranges = $ranges_now\n");
ok(wait_for($small, "SELECT bucket_ranges = $ranges_now AND NOT capacity_exceeded FROM picoroute_status"),
    "the map fits $ranges_now ranges");
my $owner = emu_json('locate', 'users', '--key', '[7]');
my $bucket = $owner->{bucket_id};
my $other = $owner->{replicaset} eq 'default_2' ? 'default_3' : 'default_2';
emu('move', 'default', $bucket, $bucket, $other);    # splits a range: two more ranges
ok(wait_for($small, 'SELECT capacity_exceeded FROM picoroute_status', 't', 30), 'over capacity: reported');
like($small->safe_psql('postgres', 'SELECT last_error FROM picoroute_status'),
    qr/picoroute\.max_bucket_ranges is $ranges_now but the topology has \d+ bucket ranges/, 'naming the setting');
emu('move', 'default', $bucket, $bucket, $owner->{replicaset});    # and back
ok(wait_for($small, "SELECT NOT capacity_exceeded AND last_error IS NULL AND bucket_ranges = $ranges_now FROM picoroute_status", 't', 60),
    'once the topology fits again the map updates by itself');
$small->stop;
done_testing();
