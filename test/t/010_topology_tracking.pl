# Topology tracking in poll mode against an emulated Picodata cluster: the initial snapshot, the
# seed scenarios done for real, master switch, instance stop/start, bucket moves, and a change of
# the instance the worker reads from.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_json start_emulator start_picoroute_node wait_for);

start_emulator();
my $node = start_picoroute_node(name => 'tracking');

# The views as the emulator's catalog says they should be.
sub expected_views {
    my $status = emu_json('status', '--json');
    my %master_of = map { $_->{name} => $_->{master} } @{ $status->{replicasets} };
    my (@instances, @replicasets, @buckets);
    my %uuid_of = map { $_->{name} => $_->{uuid} } @{ $status->{instances} };
    for my $i (@{ $status->{instances} }) {
        next if $i->{expelled};
        my $is_master = ($master_of{ $i->{replicaset} } // '') eq $i->{name} ? 't' : 'f';
        push @instances, join('|', $i->{uuid}, $i->{name}, $i->{replicaset_uuid}, $i->{state},
            $i->{pgproto_address}, $is_master);
    }
    for my $r (@{ $status->{replicasets} }) {
        next if $r->{state} eq 'expelled';
        push @replicasets, join('|', $r->{uuid}, $r->{name}, $r->{tier}, $uuid_of{ $r->{master} });
    }
    for my $t (@{ $status->{tiers} }) {
        push @buckets, join('|', $t->{name}, $_->{start}, $_->{end}, $_->{replicaset_uuid})
          for @{ $t->{buckets} };
    }
    return {
        instances => join("\n", sort @instances),
        replicasets => join("\n", sort @replicasets),
        buckets => join("\n", sort @buckets),
    };
}

sub actual_views {
    my $q = sub { join("\n", sort split /\n/, $node->safe_psql('postgres', shift)) };
    return {
        instances => $q->(
            'SELECT uuid, name, replicaset_uuid, state, address, is_master FROM picoroute_instances'),
        replicasets => $q->('SELECT uuid, name, tier, master_uuid FROM picoroute_replicasets'),
        buckets => $q->(
            'SELECT tier, bucket_id_start, bucket_id_end, replicaset_uuid FROM picoroute_buckets'),
    };
}

# Compares the views with the emulator; with `refreshes`, allows that many forced refreshes.
sub views_match {
    my ($what, %opts) = @_;
    my $expected = expected_views();
    my $actual;
    for my $attempt (1 .. ($opts{refreshes} // 2)) {
        $node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
        $actual = actual_views();
        last if $actual->{instances} eq $expected->{instances}
          && $actual->{replicasets} eq $expected->{replicasets}
          && $actual->{buckets} eq $expected->{buckets};
    }
    is($actual->{instances}, $expected->{instances}, "$what: instances match the catalog");
    is($actual->{replicasets}, $expected->{replicasets}, "$what: replicasets match the catalog");
    is($actual->{buckets}, $expected->{buckets}, "$what: bucket map matches the catalog");
}

# Every bucket of `tier` routes to the master the emulator names as its owner (sampled).
sub routes_match {
    my ($what) = @_;
    my $status = emu_json('status', '--json');
    my %master_address;
    my %by_name = map { $_->{name} => $_ } @{ $status->{instances} };
    $master_address{ $_->{uuid} } = $by_name{ $_->{master} }{pgproto_address}
      for @{ $status->{replicasets} };
    my ($tier) = grep { $_->{name} eq 'default' } @{ $status->{tiers} };
    my @wrong;
    for my $range (@{ $tier->{buckets} }) {
        for my $b ($range->{start}, $range->{end}, int(($range->{start} + $range->{end}) / 2)) {
            my $got = $node->safe_psql('postgres', "SELECT picoroute_master('default', $b)");
            push @wrong, "bucket $b: $got" if $got ne $master_address{ $range->{replicaset_uuid} };
        }
    }
    is(join(', ', @wrong), '', "$what: sampled buckets route to their owner's master");
}

ok(wait_for($node, 'SELECT generation > 0 AND instances = 4 FROM picoroute_status'),
    'the worker loaded the topology');
is($node->safe_psql('postgres', 'SELECT worker_state <> \'not started\', last_error FROM picoroute_status'),
    't|', 'worker running without error');
views_match('initial snapshot', refreshes => 1);
routes_match('initial snapshot');
is($node->safe_psql('postgres', 'SELECT name, bucket_count, buckets_mapped FROM picoroute_tiers'),
    'default|3000|3000', 'tier with its bucket_count, fully mapped');

# Seed case "replicaset added": a third replicaset joins and buckets are rebalanced.
emu('add-replicaset');
views_match('replicaset added and rebalanced');
routes_match('replicaset added');
is($node->safe_psql('postgres', 'SELECT count(*) FROM picoroute_replicasets'), '3', 'three replicasets');

# Seed case "weights changed".
emu('rebalance', '--weights', 'default_1=1,default_2=1,default_3=2');
views_match('weights changed');
routes_match('weights changed');

# Seed case "replicaset removed": default_3 is expelled, its buckets go to the others.
emu('expel', 'default_3');
views_match('replicaset expelled');
routes_match('replicaset expelled');
is($node->safe_psql('postgres', 'SELECT count(*) FROM picoroute_replicasets'), '2',
    'the expelled replicaset is gone');

# A master switch, an instance stop and start and a bucket move: each visible after ONE refresh.
emu('switch-master', 'default_2');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
is($node->safe_psql('postgres',
        "SELECT i.name FROM picoroute_replicasets r JOIN picoroute_instances i ON i.uuid = r.master_uuid WHERE r.name = 'default_2'"),
    'default_2_2', 'master switch visible after one refresh');
views_match('master switched', refreshes => 1);

emu('stop', 'default_1_2');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
is($node->safe_psql('postgres', "SELECT state, is_online FROM picoroute_instances WHERE name = 'default_1_2'"),
    'Offline|f', 'instance stop visible after one refresh');
emu('start', 'default_1_2');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
is($node->safe_psql('postgres', "SELECT state, is_online FROM picoroute_instances WHERE name = 'default_1_2'"),
    'Online|t', 'instance start visible after one refresh');

my $status = emu_json('status', '--json');
my ($rs2) = grep { $_->{name} eq 'default_2' } @{ $status->{replicasets} };
emu('move', 'default', '1', '10', 'default_2');
$node->safe_psql('postgres', 'SELECT picoroute_refresh(10000)');
is($node->safe_psql('postgres', "SELECT replicaset_uuid FROM picoroute_buckets WHERE bucket_id_start = 1"),
    $rs2->{uuid}, 'bucket move visible after one refresh');
is($node->safe_psql('postgres', "SELECT (picoroute_route('default', 1)).bucket_id"), '1934',
    'integer key 1 hashes to bucket 1934');
views_match('bucket moved', refreshes => 1);
routes_match('bucket moved');

# The instance the worker reads from is stopped: it moves to another one, clears and rebuilds.
my ($source, $resets) = split /\|/,
  $node->safe_psql('postgres', 'SELECT source_instance, topology_resets FROM picoroute_status');
my ($source_instance) = grep { $_->{pgproto_address} eq $source } @{ emu_json('status', '--json')->{instances} };
ok($source_instance, "the worker reads from $source");
emu('stop', $source_instance->{name});
ok(wait_for($node, "SELECT source_instance IS NOT NULL AND source_instance <> '$source' FROM picoroute_status"),
    'the worker moved to another instance');
ok(wait_for($node, "SELECT topology_resets > $resets AND last_error IS NULL FROM picoroute_status"),
    'the topology was cleared and rebuilt from the new instance');
is($node->safe_psql('postgres', 'SELECT count(*) FROM picoroute_replicasets'), '2',
    'replicasets rebuilt from the new source');
is($node->safe_psql('postgres', "SELECT count(*) = 0 FROM picoroute_tiers WHERE buckets_mapped <> bucket_count"),
    't', 'bucket map rebuilt from the new source');
emu('start', $source_instance->{name});
views_match('after the old source came back');

$node->stop;
done_testing();
