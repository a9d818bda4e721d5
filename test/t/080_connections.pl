# Connections of several backends against the emulated cluster: picoroute_stat_connections (each
# backend's connections with their pid, address, user, server, state and statements, the same as
# its own picoroute_connections(); gone when the backend exits; the rows beyond
# picoroute.max_stat_connections counted in connections_unlisted) and the shared budget
# picoroute.max_connections_per_instance (three concurrent sessions under a budget of one all
# finish and the count never exceeds it; a session that cannot get a place fails with
# too_many_connections, before statement_timeout too; a cancelled wait, a terminated and a killed
# backend leave no place taken).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Picoroute::TestCluster
  qw(emu emu_json emu_table start_emulator start_routing_node create_servers
  create_foreign_tables wait_for);

start_emulator();
emu_table('users', 'id int8, name text', rows => 50);

my $node = start_routing_node(name => 'connections', admin => 1, refresh_interval => '1h');
my $q = sub { $node->safe_psql('postgres', shift) };
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text', 'id', 'pico');

my $owner = emu_json('locate', 'users', '--key', '[1]');
my $owner_address =
  $q->(qq{SELECT address FROM picoroute_instances WHERE name = '$owner->{master}'});
isnt($owner_address, '', "key 1 lives on $owner->{master} at $owner_address");

# ---- picoroute_stat_connections: what each backend holds ---------------------------------------
my $a = $node->background_psql('postgres');
my $b = $node->background_psql('postgres');
my $pid_a = $a->query_safe('SELECT pg_backend_pid()');
my $pid_b = $b->query_safe('SELECT pg_backend_pid()');
$a->query_safe('SELECT name FROM users WHERE id = 1') for 1 .. 2;
$b->query_safe('SELECT name FROM users WHERE id = 1');
$b->query_safe('SELECT name FROM users WHERE id = 2');

# A backend's rows are its own picoroute_connections(): address, user, server, statements.
my $own = q{SELECT address, user_name, coalesce(server_name, '-'), statements
            FROM picoroute_connections() ORDER BY 1, 4};
my $listed = sub {
    my ($pid) = @_;
    return $q->(qq{SELECT address, user_name, coalesce(server_name, '-'), statements
                   FROM picoroute_stat_connections WHERE pid = $pid ORDER BY 1, 4});
};
my $held_a = $a->query_safe($own);
isnt($held_a, '', "backend a holds:\n$held_a");
is($listed->($pid_a), $held_a, 'the view lists the connections of backend a');
is($listed->($pid_b), $b->query_safe($own), 'and those of backend b');
is($q->(qq{SELECT count(*) FROM picoroute_stat_connections WHERE pid NOT IN ($pid_a, $pid_b)}),
    '0', 'and no other');

# A known workload: one more statement on a's connection to the owner of key 1, counted once.
my $stmts = sub {
    $q->(qq{SELECT statements FROM picoroute_stat_connections
            WHERE pid = $pid_a AND address = '$owner_address' AND server_name = 'pico'});
};
my $before = $stmts->();
$a->query_safe('SELECT name FROM users WHERE id = 1');
is($stmts->(), $before + 1, 'a statement on it adds exactly one to its statements');
is($q->(qq{SELECT instance_name, replicaset_name, tier, user_name, state, opened_at <= now(),
                  prepared_statements >= 0
           FROM picoroute_stat_connections
           WHERE pid = $pid_a AND address = '$owner_address' AND server_name = 'pico'}),
    "$owner->{master}|$owner->{replicaset}|default|picoroute|idle|t|t",
    'the row names the instance, its replicaset and tier, the remote user, the state');
is($q->(qq{SELECT sum(connections_open), sum(connections_unlisted) FROM picoroute_stat_instances}),
    $q->('SELECT count(*) FROM picoroute_stat_connections') . '|0',
    'every open connection is listed');

# b exits: its rows go; a closes its connections: its rows go.
$b->quit;
ok(wait_for($node, "SELECT count(*) FROM picoroute_stat_connections WHERE pid = $pid_b", '0', 20),
    'the rows of a backend that exited are gone');
$a->query_safe('SELECT picoroute_disconnect_all()');
is($q->("SELECT count(*) FROM picoroute_stat_connections WHERE pid = $pid_a"), '0',
    'the rows of closed connections are gone');
$a->quit;

# ---- the budget: three sessions, one place -----------------------------------------------------
$q->('ALTER SYSTEM SET picoroute.max_connections_per_instance = 1');
$q->('SELECT pg_reload_conf()');
ok(wait_for($node, q{SHOW picoroute.max_connections_per_instance}, '1', 10), 'budget of one');
$q->('SELECT picoroute_stat_reset()');

# Each holds its connection for its whole transaction (pg_sleep after the row came). The first
# holds it for 3 s and the other two start only once it holds it, so that they must wait however
# slowly the machine starts them; a wait of a minute at most (the default 10 s could pass on a
# loaded machine before all three are done).
my @runs;
my $start_run = sub {
    my ($seconds) = @_;
    my ($out, $err) = ('', '');
    local $ENV{PGOPTIONS} = '-c picoroute.failover_wait=60s';
    my $h = IPC::Run::start(
        [ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
          '-c', "SELECT name, pg_sleep($seconds) IS NOT NULL FROM users WHERE id = 1" ],
        '>', \$out, '2>', \$err, IPC::Run::timeout(120));
    push @runs, { h => $h, out => \$out, err => \$err };
};
$start_run->(3);
ok(wait_for($node, qq{SELECT count(*) FROM picoroute_stat_connections WHERE address = '$owner_address'},
            '1', 30), 'the first session holds the place');
$start_run->(1) for 2 .. 3;
my ($max_open, $max_listed, $samples) = (0, 0, 0);
while (grep { $_->{h}->pumpable } @runs) {
    my ($open, $listed_now) = split /\|/, $q->(
        qq{SELECT coalesce(max(connections_open), 0),
                  (SELECT count(*) FROM picoroute_stat_connections WHERE address = '$owner_address')
           FROM picoroute_stat_instances WHERE address = '$owner_address'});
    $max_open = $open if $open > $max_open;
    $max_listed = $listed_now if $listed_now > $max_listed;
    $samples++;
    eval { $_->{h}->pump_nb if $_->{h}->pumpable } for @runs;
}
for my $run (@runs) {
    $run->{h}->finish;
    is(${ $run->{out} } . ${ $run->{err} }, "name_1|t\n", 'a session under the budget finished');
}
cmp_ok($samples, '>', 2, "the count was sampled $samples times while they ran");
cmp_ok($max_open, '<=', 1, 'connections_open never exceeded the budget');
cmp_ok($max_listed, '<=', 1, 'nor did the listed connections');
cmp_ok($q->(qq{SELECT connection_budget_waits FROM picoroute_stat_instances
               WHERE address = '$owner_address'}), '>=', 1, 'the waits are counted');
ok(wait_for($node, qq{SELECT connections_open FROM picoroute_stat_instances
                      WHERE address = '$owner_address'}, '0', 20), 'no place is left taken');

# A session holds the place in an open transaction: another cannot get it. Statistics off change
# nothing to the count nor to the list.
my $holder = $node->background_psql('postgres');
my $pid_h = $holder->query_safe('SELECT pg_backend_pid()');
$holder->query_safe('SET picoroute.track_statistics = off');
$holder->query_safe('BEGIN');
is($holder->query_safe('SELECT name FROM users WHERE id = 1'), 'name_1', 'the holder reads');
is($q->(qq{SELECT count(*) FROM picoroute_stat_connections
           WHERE pid = $pid_h AND address = '$owner_address'}),
    '1', 'its connection is listed with statistics off');
for my $case ([ 'SET picoroute.failover_wait = 300', 'after picoroute.failover_wait' ],
              [ "SET statement_timeout = '1s'", 'before statement_timeout' ],
              [ "SET picoroute.track_statistics = off;\nSET picoroute.failover_wait = 300",
                'with statistics off' ]) {
    my ($set, $label) = @$case;
    my ($ret, $out, $err) = $node->psql('postgres',
        "\\set VERBOSITY verbose\n$set;\nSELECT name FROM users WHERE id = 1;");
    like($err, qr/ERROR:  53300: picoroute: too many connections to instance \S+/,
        "the waiting session fails with too_many_connections $label");
    like($err, qr/DETAIL:  picoroute.max_connections_per_instance is 1 and 1 connections to instance/,
        'the detail names the budget and the instance');
    like($err, qr/HINT:  Raise picoroute.max_connections_per_instance/, 'the hint names the setting');
}
is($q->(qq{SELECT connections_open FROM picoroute_stat_instances WHERE address = '$owner_address'}),
    '1', 'the failed sessions left no place taken');

# A wait that is cancelled leaves nothing either.
my $waiter = $node->background_psql('postgres', on_error_stop => 0);
my $pid_w = $waiter->query_safe('SELECT pg_backend_pid()');
$waiter->query_safe('SET picoroute.failover_wait = 60000');
$waiter->query_until(qr/started/, "\\echo started\nSELECT name FROM users WHERE id = 1;\n");
ok(wait_for($node, qq{SELECT wait_event_type FROM pg_stat_activity WHERE pid = $pid_w},
    'Extension', 20), 'a third session waits for the place');
$q->("SELECT pg_cancel_backend($pid_w)");
like($waiter->query('SELECT 1'), qr/1/, 'the cancelled session goes on');
is($q->(qq{SELECT connections_open FROM picoroute_stat_instances WHERE address = '$owner_address'}),
    '1', 'the cancelled wait left no place taken');
$waiter->quit;

# The holder is terminated: its place and its row go.
$q->("SELECT pg_terminate_backend($pid_h)");
ok(wait_for($node, qq{SELECT connections_open FROM picoroute_stat_instances
                      WHERE address = '$owner_address'}, '0', 20), 'a terminated backend gives its place back');
is($q->('SELECT count(*) FROM picoroute_stat_connections'), '0', 'and its row');
eval { $holder->quit };

# A backend killed outright: the postmaster reinitialises shared memory; nothing stays taken.
$q->('ALTER SYSTEM SET restart_after_crash = on');
$q->('SELECT pg_reload_conf()');
my $victim = $node->background_psql('postgres', on_error_stop => 0);
my $pid_v = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_safe('SELECT name FROM users WHERE id = 1');
# The test command takes a backend killed by a signal for a crash, unless the test says it killed it.
open(my $kills, '>>', "$PostgreSQL::Test::Utils::log_path/deliberate_kills") or die "deliberate_kills: $!";
print $kills "$pid_v\n";
close($kills);
kill 'KILL', $pid_v;
eval { $victim->quit };
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 60),
    'the server restarted and the map is back');
is($q->('SELECT coalesce(sum(connections_open), 0) FROM picoroute_stat_instances')
      . '|' . $q->('SELECT count(*) FROM picoroute_stat_connections'),
    '0|0', 'no place and no row is left after a killed backend');
is($q->('SELECT name FROM users WHERE id = 1'), 'name_1', 'and routing works under the budget');

# ---- rows beyond picoroute.max_stat_connections --------------------------------------------------
$q->('ALTER SYSTEM RESET picoroute.max_connections_per_instance');
$node->append_conf('postgresql.conf', "picoroute.max_stat_connections = 1\n");
$node->restart;
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 30),
    'map loaded after the restart');
my @two = map { $node->background_psql('postgres') } 1 .. 2;
$_->query_safe('SELECT name FROM users WHERE id = 1') for @two;
is($q->('SELECT count(*) FROM picoroute_stat_connections'), '1', 'one connection is listed');
is($q->(q{SELECT sum(connections_open) - sum(connections_unlisted), sum(connections_unlisted) > 0
          FROM picoroute_stat_instances}),
    '1|t', 'the connections beyond the slots are counted unlisted');
is($q->(qq{SELECT connections_open FROM picoroute_stat_instances WHERE address = '$owner_address'}),
    '2', 'and open');
$_->quit for @two;
ok(wait_for($node, q{SELECT coalesce(sum(connections_open), 0) || '|' ||
                            coalesce(sum(connections_unlisted), 0) FROM picoroute_stat_instances},
    '0|0', 20), 'both gauges are back to zero');

done_testing();
