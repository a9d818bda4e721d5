# The Picodata version picoroute detects: picoroute_status and picoroute_instances show the release
# the instances report (_pico_instance.picodata_version), and a server without the option
# picodata_version follows it, hashing by that version's rule (src/core/bucket_hash.h: doubles hash
# differently from the 26.1.0 tag on, integral ones as integers, the others without the cb header):
# float8 keys are inserted, read, updated and deleted with the right rows, EXPLAIN showing the bucket
# of the detected version's rule; a float8-keyed table loaded by the emulator (rows stored where the
# emulated release stores them) is read back by routed key lookups. The option still overrides the
# detection.
# The cluster's default tier is called `main`: servers without a tier option take the tier that
# _pico_tier.is_default flags.
# Runs on every emulated version: the detected version and the rule for doubles differ by version.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_private_psql emu_table start_emulator start_picoroute_node exec_options
  wait_for picodata_has picodata_release_with);

start_emulator(tiers => [ 'main:2:1:3000', 'spare:1:1:300' ]);
my $release = emu_json('status', '--json')->{picodata_version};
emu_table('fl', 'f float8, v text');
# Keys 0.5, 1.0, ..., 20.0 (picoemu load: i * 0.5 for i = 1..40), bucketed by the emulator's Python reference and
# checked again by its storages' PL/pgSQL.
emu_table('fl_loaded', 'f float8, v text', rows => 40);

my $node = start_picoroute_node(name => 'version', refresh_interval => '300ms',
    conninfo => emu('conninfo', '--user', 'admin'));
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'main'", '2', 10), 'map loaded');
# Neither server names a tier; pico_o overrides the detected version with a release of the other rule.
my $integral = picodata_has('integral_double_hash');
my $other = picodata_release_with(integral_double_hash => !$integral);
my $xo = exec_options();
$node->safe_psql('postgres', qq{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (dbname 'picodata', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE fl (f float8, v text) SERVER pico OPTIONS (sharding_key 'f');
CREATE FOREIGN TABLE fl_loaded (f float8, v text) SERVER pico OPTIONS (sharding_key 'f');
CREATE SERVER pico_o FOREIGN DATA WRAPPER picoroute
  OPTIONS (dbname 'picodata', picodata_version '$other');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_o OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE fl_o (f float8, v text) SERVER pico_o
  OPTIONS (table_name 'fl', sharding_key 'f');
});

# ---- the detected version is shown ----------------------------------------------------------------
ok(wait_for($node, 'SELECT picodata_version FROM picoroute_status', $release, 10),
   "picoroute_status.picodata_version is the emulated release $release");
is($node->safe_psql('postgres',
    "SELECT count(*) FILTER (WHERE picodata_version = '$release') || '/' || count(*) FROM picoroute_instances"),
   do { my $n = $node->safe_psql('postgres', 'SELECT count(*) FROM picoroute_instances'); "$n/$n" },
   'picoroute_instances shows the version of every instance');

# ---- float8 keys by the detected rule -------------------------------------------------------------
# The bucket of a double key under a rule (a release line: 25.5 or 26.1), from the Python reference.
sub reference_bucket {
    my ($key, $rule) = @_;
    my $out = `python3 $FindBin::RealBin/../tools/bucket_hash_reference.py --rule $rule double:$key`;
    chomp $out;
    return $out;
}
my $rule = $integral ? '26.1' : '25.5';
my $other_rule = $integral ? '25.5' : '26.1';
note("emulated $release: doubles hash by $rule; server pico_o (picodata_version '$other') by $other_rule");

# Where the storages hold the row of key $key: "bucket_id@master|v", read around picoroute.
sub stored {
    my ($key) = @_;
    my @found;
    for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
        my $row = emu_private_psql($rs->{master},
            "SELECT bucket_id || '\@$rs->{master}|' || v FROM _picoemu_local.fl WHERE f = '$key'::float8");
        push @found, $row if $row ne '';
    }
    return join(',', @found);
}

my $i = 0;
for my $key ('1.0', '-3.0', '1.5', '1e300') {
    $i++;
    my $bucket = reference_bucket($key, $rule);
    my $located = emu_json('locate', 'fl', '--key', "[$key]");
    is($located->{bucket_id}, $bucket, "key $key: the emulator and the reference agree on bucket $bucket");
    is($node->safe_psql('postgres', "SELECT picoroute_bucket_id('main', '$key'::float8)"), $bucket,
       "key $key: picoroute_bucket_id hashes by the detected version's rule");
    $node->safe_psql('postgres', "INSERT INTO fl VALUES ('$key'::float8, 'v$i')");
    is(stored($key), "$bucket\@$located->{master}|v$i", "key $key: INSERT stored the row at its owner");
    like($node->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM fl WHERE f = '$key'::float8"),
         qr/Routing: bucket $bucket -> /, "key $key: EXPLAIN routes by the $rule rule (bucket $bucket)");
    is($node->safe_psql('postgres', "SELECT v FROM fl WHERE f = '$key'::float8"), "v$i", "key $key: read");
    $node->safe_psql('postgres', "UPDATE fl SET v = 'u$i' WHERE f = '$key'::float8");
    is($node->safe_psql('postgres', "SELECT v FROM fl WHERE f = '$key'::float8"), "u$i", "key $key: UPDATE");
    is(stored($key), "$bucket\@$located->{master}|u$i", "key $key: the stored row was updated");
    my $other_bucket = reference_bucket($key, $other_rule);
    like($node->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM fl_o WHERE f = '$key'::float8"),
         qr/Routing: bucket $other_bucket -> /,
         "key $key: picodata_version '$other' overrides the detection (bucket $other_bucket)");
    $node->safe_psql('postgres', "DELETE FROM fl WHERE f = '$key'::float8");
    is($node->safe_psql('postgres', "SELECT count(*) FROM fl WHERE f = '$key'::float8"), '0', "key $key: DELETE");
    is(stored($key), '', "key $key: the stored row is gone");
}

# ---- a float8-keyed table loaded by the emulator, read back by routed key lookups ---------------------
# Where the storages hold each loaded row (f -> bucket_id), read around picoroute.
my %loaded_bucket;
for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
    for my $line (split /\n/, emu_private_psql($rs->{master},
            "SELECT f || '|' || bucket_id FROM _picoemu_local.fl_loaded")) {
        my ($f, $b) = split /\|/, $line;
        $loaded_bucket{$f} = $b;
    }
}
is(scalar(keys %loaded_bucket), 40, 'the emulator stored the 40 loaded rows');
my @differ = grep { reference_bucket($_, $rule) != reference_bucket($_, $other_rule) } ('0.5', '1', '7.5');
is(scalar(@differ), 3, "keys 0.5, 1 and 7.5 hash differently under the 25.5 and 26.1 rules");
is($node->safe_psql('postgres', q{
    SELECT string_agg(f || '|' || picoroute_bucket_id('main', f), ',' ORDER BY f)
    FROM generate_series(1, 40) i, LATERAL (SELECT i * 0.5::float8 AS f) k}),
   join(',', map { "$_|$loaded_bucket{$_}" } sort { $a <=> $b } keys %loaded_bucket),
   "picoroute_bucket_id of every loaded key is the bucket the emulated $release stored it in");
for my $key ('0.5', '1', '1.5', '7', '7.5', '12.5', '19.5', '20') {
    my $located = emu_json('locate', 'fl_loaded', '--key', "[$key]");
    is($located->{bucket_id}, $loaded_bucket{$key}, "loaded key $key: stored in bucket $loaded_bucket{$key}");
    like($node->safe_psql('postgres',
            "EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM fl_loaded WHERE f = '$key'::float8"),
         qr/Routing: bucket $loaded_bucket{$key} -> [^ ]+:$located->{port} \(master of replicaset /,
         "loaded key $key: the lookup is routed to $located->{master}, master of its owner");
    is($node->safe_psql('postgres', "SELECT v FROM fl_loaded WHERE f = '$key'::float8"),
       'v_' . ($key * 2), "loaded key $key: the routed lookup reads its row back");
}

done_testing();
