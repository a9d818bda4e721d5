# Monitoring against the emulated cluster: picoroute_topology_events (a bucket move, a master switch
# and a stopped instance logged in order with their fields; kept across a restart of the worker; a
# ring smaller than the events says how many it dropped; a refresh that failed and recovered), and
# picoroute_stat_instances (the connections two backends hold, counted per instance, back to zero
# when they close or exit, stats_reset) with picoroute_stat_tables' scans.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_table start_emulator start_picoroute_node start_routing_node create_servers
  create_foreign_tables wait_for);

start_emulator();
emu_table('users', 'id int8, name text', rows => 50);

# The worker refreshes only when asked (and at its start): each change below is read by one refresh.
my $node = start_routing_node(name => 'monitoring', admin => 1, refresh_interval => '1h');
my $q = sub { $node->safe_psql('postgres', shift) };

# ---- picoroute_topology_events --------------------------------------------------------------
my $status = emu_json('status', '--json');
my @rs = sort map { $_->{name} } @{ $status->{replicasets} };
is(scalar(@rs), 2, 'two replicasets');
my %uuid_to_rs = map { $_->{uuid} => $_->{name} } @{ $status->{replicasets} };

# The first map is logged: what it holds, every bucket of the tier mapped.
is($q->(q{SELECT string_agg(DISTINCT kind, ',' ORDER BY kind) FROM picoroute_topology_events}),
    'buckets_mapped,cluster_version_changed,instance_added,replicaset_added,tier_added',
    'the first map is logged as what it holds');
is($q->(q{SELECT sum(bucket_id_end - bucket_id_start + 1) FROM picoroute_topology_events
          WHERE kind = 'buckets_mapped' AND tier = 'default'}),
    '3000', 'every bucket of tier default was mapped');
is($q->(q{SELECT count(*) FROM picoroute_topology_events WHERE kind = 'instance_added'}),
    scalar(@{ $status->{instances} }), 'one instance_added per instance');

my $start = $q->('SELECT max(seq) FROM picoroute_topology_events');
my ($tier) = grep { $_->{name} eq 'default' } @{ $status->{tiers} };
my ($first_range) = grep { $_->{start} == 1 } @{ $tier->{buckets} };
my $owner = $uuid_to_rs{ $first_range->{replicaset_uuid} };
my ($other) = grep { $_ ne $owner } @rs;

# 1. Buckets 1-10 move to the other replicaset.
emu('move', 'default', '1', '10', $other);
$q->('SELECT picoroute_refresh(10000)');

# 2. The other replicaset's master switches to its replica.
my ($other_rs) = grep { $_->{name} eq $other } @{ $status->{replicasets} };
my $old_master = $other_rs->{master};
emu('switch-master', $other);
my ($switched) = grep { $_->{name} eq $other } @{ emu_json('status', '--json')->{replicasets} };
my $new_master = $switched->{master};
isnt($new_master, $old_master, "the master of $other switched to $new_master");
$q->('SELECT picoroute_refresh(10000)');

# 3. A replica that is not the worker's source stops.
my $source = $q->('SELECT source_instance FROM picoroute_status');
my ($stopped) = grep {
    $_->{role} ne 'master' && $_->{pgproto_address} ne $source
} @{ emu_json('status', '--json')->{instances} };
ok($stopped, "a replica to stop ($stopped->{name}; the worker reads from $source)");
emu('stop', $stopped->{name});
$q->('SELECT picoroute_refresh(10000)');

my $events_query = qq{SELECT kind, tier, bucket_id_start, bucket_id_end, from_replicaset,
    to_replicaset, replicaset, instance, old_value, new_value, generation > 0, event_time <= now()
    FROM picoroute_topology_events WHERE seq > $start ORDER BY seq};
my $logged = $q->($events_query);
is($logged,
    join("\n",
        "buckets_moved|default|1|10|$owner|$other|||||t|t",
        "master_switched|default|||||$other|$new_master|$old_master|$new_master|t|t",
        "instance_state_changed|default|||||$stopped->{replicaset}|$stopped->{name}|Online|Offline|t|t"),
    'the move, the switch and the stop are logged in order with their fields');
is($q->(qq{SELECT count(DISTINCT generation) = 3 AND bool_and(generation <= (SELECT generation
           FROM picoroute_status)) FROM picoroute_topology_events WHERE seq > $start}),
    't', 'each change carries the generation of the map it made');
emu('start', $stopped->{name});
$q->('SELECT picoroute_refresh(10000)');
is($q->(qq{SELECT kind, instance, old_value, new_value FROM picoroute_topology_events
           WHERE seq > $start ORDER BY seq DESC LIMIT 1}),
    "instance_state_changed|$stopped->{name}|Offline|Online", 'and its start again');

# A restart of the worker keeps the log (shared memory) and adds nothing to it.
my $all_before = $q->('SELECT seq, kind, generation FROM picoroute_topology_events ORDER BY seq');
my $old_pid = $q->('SELECT picoroute_restart_worker()');
ok(wait_for($node, "SELECT worker_pid IS NOT NULL AND worker_pid <> $old_pid FROM picoroute_status", 't', 30),
    'the worker was restarted');
$q->('SELECT picoroute_refresh(10000)');
is($q->('SELECT seq, kind, generation FROM picoroute_topology_events ORDER BY seq'), $all_before,
    'the restarted worker kept every event and logged none (the map did not change)');

# A ring smaller than the events: the first row counts what was dropped, the newest are kept.
my $tiny = start_picoroute_node(name => 'tiny_log', extra_conf => "picoroute.max_topology_events = 4\n");
ok(wait_for($tiny, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '3', 20),
    'the second node loaded the map (three ranges since the move)');
my @rows = split /\n/, $tiny->safe_psql('postgres',
    q{SELECT coalesce(seq::text, '-'), kind, new_value FROM picoroute_topology_events});
is(scalar(@rows), 5, 'one row for the dropped events and the 4 kept');
my ($dropped_seq, $dropped_kind, $dropped) = split /\|/, $rows[0];
is("$dropped_seq|$dropped_kind", '-|events_dropped', 'the first row says events were dropped');
my @kept = map { (split /\|/)[0] } @rows[ 1 .. 4 ];
is(join(',', @kept), join(',', map { $dropped + $_ } 1 .. 4),
    "it counts the $dropped dropped ones: the kept events follow them");
like($tiny->safe_psql('postgres', q{SELECT detail FROM picoroute_topology_events WHERE seq IS NULL}),
    qr/^\Q$dropped\E older events were dropped: picoroute\.max_topology_events \(4\) keeps the newest$/,
    'its detail names the setting');

# The worker's own events (this node polls as the cluster's user picoroute): a refresh that fails
# for a missing grant, and the first that succeeds again.
emu('revoke', '_pico_replicaset');
my ($ret) = $tiny->psql('postgres', 'SELECT picoroute_refresh(10000)');
isnt($ret, 0, 'a refresh fails without the grant on _pico_replicaset');
emu('grant', '_pico_replicaset');
ok(wait_for($tiny, 'SELECT last_error IS NULL FROM picoroute_status', 't', 20), 'the refreshes succeed again');
like($tiny->safe_psql('postgres', q{SELECT kind, detail ~ '_pico_replicaset' FROM picoroute_topology_events
                                    WHERE kind LIKE 'refresh%' ORDER BY seq}),
    qr/^(refresh_failed\|t\n)+refresh_recovered\|t$/,
    'the log says the refresh failed (the error names the table), then recovered');
$tiny->stop;

# ---- picoroute_stat_instances: connections of two backends ---------------------------------
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text', 'id', 'pico');
# The route check of users' key (its EXPLAIN connection, opened and closed) happens here, once for
# all sessions, before the counting below.
$q->('SELECT name FROM users WHERE id = 1');
$q->('SELECT picoroute_stat_reset()');
my $a = $node->background_psql('postgres');
my $b = $node->background_psql('postgres');
is($a->query_safe('SELECT name FROM users WHERE id = 1'), 'name_1', 'backend a reads a row');
is($b->query_safe('SELECT name FROM users WHERE id = 2'), 'name_2', 'backend b reads a row');
is($b->query_safe('SELECT name FROM users WHERE id = 1'), 'name_1', 'and another');

# What both backends hold, by address, from their own picoroute_connections().
sub held {
    my %count;
    for my $session (@_) {
        $count{$_}++ for grep { $_ ne '' } split /\n/,
          $session->query_safe('SELECT address FROM picoroute_connections()');
    }
    return join("\n", map { "$_|$count{$_}" } sort keys %count);
}
my $stat_open = q{SELECT address, connections_open FROM picoroute_stat_instances
                  WHERE connections_open > 0 ORDER BY address};
my $held = held($a, $b);
isnt($held, '', "the backends hold connections:\n$held");
is($q->($stat_open), $held, 'connections_open counts the connections of both backends, by instance');
is($q->(q{SELECT address, connections_opened FROM picoroute_stat_instances
          WHERE connections_opened > 0 ORDER BY address}),
    $held, 'connections_opened too (none was closed since the reset)');
my $owner_of_1 = emu_json('locate', 'users', '--key', '[1]');
is($q->(qq{SELECT instance_name, tier FROM picoroute_stat_instances
           WHERE address = (SELECT address FROM picoroute_instances WHERE name = '$owner_of_1->{master}')}),
    "$owner_of_1->{master}|default", 'the row of an instance names it and its tier');
is($q->(q{SELECT scans FROM picoroute_stat_tables WHERE relname = 'users'}), '3',
    'picoroute_stat_tables counts the three scans of users');

# a closes its connections, b exits: the gauge follows; what was opened stays counted.
$a->query_safe('SELECT picoroute_disconnect_all()');
is($q->($stat_open), held($b), 'connections_open drops by what a closed');
$b->quit;
ok(wait_for($node, 'SELECT coalesce(sum(connections_open), 0) FROM picoroute_stat_instances', '0', 20),
    'no connection is open once b exited');
my $opened = $q->('SELECT sum(connections_opened) FROM picoroute_stat_instances');
cmp_ok($opened, '>=', 2, "connections_opened keeps the $opened opened since the reset");

# A reset zeroes what was counted, not what is open now.
$a->query_safe('SELECT name FROM users WHERE id = 1');
my $open_now = $q->('SELECT sum(connections_open) FROM picoroute_stat_instances');
cmp_ok($open_now, '>=', 1, 'a holds a connection again');
$q->('SELECT picoroute_stat_reset()');
is($q->(q{SELECT sum(connections_opened), sum(connections_open), bool_and(stats_reset IS NOT NULL)
          FROM picoroute_stat_instances}),
    "0|$open_now|t", 'picoroute_stat_reset zeroes connections_opened, keeps connections_open');
is($q->(q{SELECT scans FROM picoroute_stat_tables WHERE relname = 'users'}), '0',
    'and the table counters');
$a->quit;

# The first queries of the README's section Monitoring run as written.
my $readme = slurp_file("$FindBin::RealBin/../../README.md");
my ($section) = $readme =~ /^## Monitoring\n(.*?)(?=^## )/ms;
my ($queries) = ($section // '') =~ /^```sql\n(.*?)^```$/ms;
ok(defined $queries, 'the README has the first queries of Monitoring');
my @statements = grep { /\S/ } map { s/^--[^\n]*\n//mgr } split /;\s*\n/, $queries // '';
cmp_ok(scalar(@statements), '>=', 5, 'five queries or more');
for my $statement (@statements) {
    my ($ret, $out, $err) = $node->psql('postgres', $statement);
    is($ret, 0, "README query runs: " . (split /\n/, $statement)[0]) or diag($err);
}

# Nothing crashed (a backend exit ran the statistics' exit callback).
$node->stop;
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal/, 'no process was terminated by a signal');
done_testing();
