# The per-statement counters of picoroute_stat_instances and picoroute_stat_tables, checked exactly
# against a known workload run by one session after picoroute_stat_reset(): point reads routed by
# key, a coordinator's statement, a masters scatter, an INSERT split by owner into key batches, a
# keyless read in bucket chunks, a remote error, a write refused by a demoted master and sent again
# after a failover wait, and a master that refuses connections. With picoroute.track_statistics off
# nothing moves; picoroute.log_routes writes one line per statement to the server log; a route
# check's connection counts against picoroute.max_connections_per_instance.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_table start_emulator start_routing_node create_servers create_foreign_tables
  wait_for);

# 600 buckets: a masters scatter sends one statement per master (each lists its 300 buckets).
start_emulator(tiers => ['default:2:2:600']);
emu_table('users', 'id int8, name text', rows => 100);

# The worker refreshes only when asked or woken: the map stays stale after the switch below.
my $node = start_routing_node(name => 'stat_counters', admin => 1, refresh_interval => '1h');
my $q = sub { $node->safe_psql('postgres', shift) };
create_servers($node, qw(pico pico_m));
create_foreign_tables($node, 'users', 'id bigint, name text', 'id', qw(pico pico_m));

my %address_of = map { (split /\|/)[0] => (split /\|/)[1] }
  split /\n/, $q->('SELECT name, address FROM picoroute_instances');
sub master_address {
    my ($key) = @_;
    return $address_of{ emu_json('locate', 'users', '--key', "[$key]")->{master} };
}
my @addresses = sort values %address_of;

# One session runs the workload: the checks of a table's declaration at its first use in a
# backend happen in the warm-up, before the reset.
my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe('SELECT count(*) FROM users');
$s->query_safe('SELECT count(*) FROM users_m');
$s->query_safe('SELECT name FROM users WHERE id = 1');

# The columns of one instance, by address (0 for an address without a row).
my @cols = qw(statements routed_statements coordinator_statements scatter_statements
  batch_statements chunk_statements resent_statements answers rows_received refused_errors
  unknown_outcome_errors connection_errors remote_errors failover_waits);
sub stats_of {
    my %out;
    for my $line (split /\n/, $q->('SELECT address, ' . join(', ', @cols)
          . ' FROM picoroute_stat_instances WHERE address IS NOT NULL')) {
        my ($address, @v) = split /\|/, $line;
        $out{$address} = { map { $cols[$_] => $v[$_] } 0 .. $#cols };
    }
    return \%out;
}
sub total {
    my ($stats, $col) = @_;
    my $sum = 0;
    $sum += $_->{$col} for values %$stats;
    return $sum;
}
sub table_stats {
    my ($table) = @_;
    return $q->(qq{SELECT scans, pushed_scans, inserts, direct_modifies, statements,
        routed_statements, coordinator_statements, scatter_statements, batch_statements,
        chunk_statements, rows_read, rows_written, chunked_reads
        FROM picoroute_stat_tables WHERE relname = '$table'});
}

# ---- reads routed by key ------------------------------------------------------------------------
$q->('SELECT picoroute_stat_reset()');
my %routed;
for my $id (1 .. 5) {
    is($s->query_safe("SELECT name FROM users WHERE id = $id"), "name_$id", "point read $id");
    $routed{ master_address($id) }++;
}
my $st = stats_of();
for my $address (@addresses) {
    my $n = $routed{$address} // 0;
    my $got = $st->{$address} // { map { $_ => 0 } @cols };
    is(join(',', map { $got->{$_} } qw(statements routed_statements answers rows_received)),
        "$n,$n,$n,$n", "$address: $n statements routed by key, as many answers and rows");
}
is($q->(q{SELECT bool_and(bytes_received > 0 AND p50_time > 0 AND total_time > 0)
          FROM picoroute_stat_instances WHERE routed_statements > 0}),
    't', 'their bytes and answer times are counted');
is(total($st, 'statements'), 5, 'nothing else was sent');
is(table_stats('users'), '5|0|0|0|5|5|0|0|0|0|5|0|0',
    'picoroute_stat_tables: 5 scans, 5 statements routed by key, 5 rows read');

# ---- exact under concurrent backends ------------------------------------------------------------
# Four pgbench clients at once, 50 point reads each (prepared: the plans turn generic): every read
# counted once, by instance and by table, however the backends interleave.
my $script = $node->basedir . '/point_read.sql';
open(my $fh, '>', $script) or die "cannot write $script: $!";
print $fh "\\set k random(1, 100)\nSELECT name FROM users WHERE id = :k;\n";
close($fh);
$q->('SELECT picoroute_stat_reset()');
$node->command_ok([ 'pgbench', '-n', '-c', '4', '-j', '2', '-t', '50', '-M', 'prepared', '-f', $script,
    'postgres' ], 'pgbench: 4 clients x 50 point reads');
# Each new backend also checks the table's declaration at its first use: one catalog read each.
is($q->(q{SELECT sum(routed_statements), sum(coordinator_statements), sum(statements), sum(answers)
          FROM picoroute_stat_instances}), '200|4|204|204',
    'the 200 reads routed by key, the 4 declaration checks, each answered once');
is($q->(q{SELECT scans, routed_statements, rows_read FROM picoroute_stat_tables WHERE relname = 'users'}),
    '200|200|200', 'picoroute_stat_tables: 200 scans, 200 routed statements, 200 rows');

# ---- a coordinator, a masters scatter, key batches, chunks, a remote error ----------------------
$q->('SELECT picoroute_stat_reset()');
is($s->query_safe('SELECT count(*) FROM users'), '100', 'a count through a coordinator');
$st = stats_of();
is(join(',', total($st, 'statements'), total($st, 'coordinator_statements'),
        total($st, 'rows_received')), '1,1,1', 'one coordinator statement, one row (pushed count)');
is($s->query_safe('SELECT count(*) FROM users_m'), '100', 'a count over a masters scatter');
$st = stats_of();
my @masters = sort map { $address_of{ $_->{master} } } @{ emu_json('status', '--json')->{replicasets} };
for my $address (@masters) {
    is($st->{$address}{scatter_statements}, 1, "$address: one statement of the masters scatter");
}
is(total($st, 'scatter_statements'), scalar(@masters), 'to the masters only');
is(total($st, 'rows_received'), 101, 'its 100 rows (and the count before)');

# Ten rows inserted, grouped by owner: a statement per owner, a key batch where it has several.
my (%inserted, $expect_batch, $expect_routed);
$inserted{ master_address($_) }++ for 1001 .. 1010;
$expect_batch = grep { $_ > 1 } values %inserted;
$expect_routed = grep { $_ == 1 } values %inserted;
$q->('SELECT picoroute_stat_reset()');
$s->query_safe('INSERT INTO users SELECT g, \'new_\' || g FROM generate_series(1001, 1010) g');
$st = stats_of();
is(total($st, 'batch_statements') . ',' . total($st, 'routed_statements'),
    "$expect_batch,$expect_routed", 'INSERT: one statement per owner, key batches where several rows');
is(table_stats('users'), join('|', 0, 0, 1, 0, $expect_batch + $expect_routed, $expect_routed, 0, 0,
        $expect_batch, 0, 0, 10, 0), 'picoroute_stat_tables: one insert, 10 rows written');

# A keyless read over its row bound: refused by the bound (a remote error), counted per bucket,
# then read in chunks (EXPLAIN ANALYZE says how many).
$q->('SELECT picoroute_stat_reset()');
my $analyze = $s->query_safe("SET picoroute.keyless_row_max = 40;
    EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM users;
    RESET picoroute.keyless_row_max;");
my ($chunks) = $analyze =~ /Chunks: (\d+)/;
ok(defined $chunks && $chunks >= 3, 'the read went in chunks of at most 40 rows: ' . ($chunks // '?'))
  or diag($analyze);
$st = stats_of();
is(join(',', map { total($st, $_) } qw(coordinator_statements remote_errors chunk_statements)),
    join(',', 1, 1, 1 + $chunks),
    'one statement refused by the bound (a remote error), the count per bucket and the chunks');
is(table_stats('users'), join('|', 1, 0, 0, 0, 2 + $chunks, 0, 1, 0, 0, 1 + $chunks, 110, 0, 1),
    'picoroute_stat_tables: the chunk statements, 110 rows read, one chunked read');

# A remote error: the division runs where the row is.
$q->('SELECT picoroute_stat_reset()');
my $err = $s->query('SELECT name FROM users WHERE id = 1 AND 10 / (id - 1) > 0');
like($s->{stderr}, qr/division by zero/, 'the instance raises division by zero');
$s->{stderr} = '';
$st = stats_of();
my $owner1 = master_address(1);
is(join(',', map { $st->{$owner1}{$_} } qw(routed_statements answers remote_errors)), '1,1,1',
    "$owner1: the statement routed there and its remote error");
is(total($st, 'remote_errors'), 1, 'one remote error in all');

# ---- work pushed to Picodata or done here, per table ---------------------------------------------
# Counted once per execution from the plan: a pushed ForeignScan's aggregate, sort or join, and the
# Agg, Sort and join nodes of this server above a table's scan (the batched join too).
$q->('CREATE TABLE local_ids (id int8)');
$q->('INSERT INTO local_ids VALUES (1), (2), (3)');
$q->('ANALYZE local_ids');
$q->(q{CREATE FOREIGN TABLE users_j (id bigint, name text) SERVER pico
       OPTIONS (table_name 'users', sharding_key 'id')});
my $work = sub {
    $q->(q{SELECT pushed_aggregates, pushed_sorts, pushed_joins, local_aggregates, local_sorts,
                  local_joins FROM picoroute_stat_tables WHERE relname = 'users'});
};
my @work_cases = (
    [ 'SELECT count(*) FROM users', '1|0|0|0|0|0', 'a pushed count' ],
    [ 'SELECT id FROM users ORDER BY id DESC LIMIT 2', '0|1|0|0|0|0', 'a pushed ORDER BY ... LIMIT' ],
    [ 'SELECT count(*), name FROM users GROUP BY name ORDER BY name LIMIT 1', '1|0|0|0|1|0',
      'a pushed GROUP BY, its ORDER BY here' ],
    [ 'SELECT max(length(name)) FROM users WHERE id < 5', '0|0|0|1|0|0',
      'an aggregate over a function Picodata lacks: here' ],
    [ 'SELECT name FROM users WHERE id < 5 ORDER BY length(name), id', '0|0|0|0|1|0',
      'a sort by a function Picodata lacks: here' ],
    [ 'SELECT u.name FROM local_ids l JOIN users u ON u.id = l.id', '0|0|0|0|0|1',
      'a join with a local table: here' ],
    [ 'SELECT u.name FROM users u JOIN users_m m ON m.id = u.id WHERE u.id = 1', '0|0|0|0|0|1',
      'a join of tables of two servers: here' ],
    [ 'SELECT u.name FROM users u JOIN users_j j ON j.id = u.id WHERE u.id = 1', '0|0|1|0|0|0',
      'a join of two tables of one server on the key: pushed' ],
);
for my $case (@work_cases) {
    my ($sql, $want, $what) = @$case;
    $q->('SELECT picoroute_stat_reset()');
    $s->query_safe($sql);
    is($work->(), $want, "pushed|local aggregates, sorts, joins of users: $what")
      or diag($q->("EXPLAIN (VERBOSE, COSTS OFF) $sql"));
}
$q->('SELECT picoroute_stat_reset()');
$s->query_safe('EXPLAIN SELECT count(*) FROM users');
is($work->(), '0|0|0|0|0|0', 'EXPLAIN without ANALYZE counts no work');

# ---- picoroute.track_statistics off: nothing moves ----------------------------------------------
$q->('SELECT picoroute_stat_reset()');
$s->query_safe('SET picoroute.track_statistics = off');
$s->query_safe('SELECT name FROM users WHERE id = 2');
$s->query_safe('SELECT count(*) FROM users_m');
$s->query_safe('RESET picoroute.track_statistics');
is($q->(q{SELECT sum(statements) + sum(answers) + sum(rows_received) FROM picoroute_stat_instances}),
    '0', 'track_statistics off: no statement counted');
is($q->(q{SELECT scans + statements + rows_read FROM picoroute_stat_tables WHERE relname = 'users'}),
    '0', 'nor for the table');

# ---- routes in the log ----------------------------------------------------------------------------
my $log_offset = -s $node->logfile;
$s->query_safe("SET picoroute.log_routes = log; SELECT name FROM users WHERE id = 3;
    RESET picoroute.log_routes; SELECT name FROM users WHERE id = 4");
my $log = slurp_file($node->logfile, $log_offset);
my $owner3 = master_address(3);
my @lines = $log =~ /(picoroute route: .*)/g;
is(scalar(@lines), 1, 'log_routes: one line for the statement sent while it was on')
  or diag($log);
like($lines[0] // '', qr/^picoroute route: routed by key to \Q$owner3\E \(master \S+ of replicaset \S+\), bucket \d+, 1 row, \d+\.\d{3} ms; remote SQL: SELECT .*"users"/,
    'it gives the routing kind, the instance, the bucket, the rows, the time and the statement');

# ---- route checks under the connection budget ------------------------------------------------
# The EXPLAIN a route check sends goes over a connection of its own: it takes its place under
# picoroute.max_connections_per_instance like any other. Session b holds the only place at every
# master (in a transaction); a's first keyed read of a new table cannot check its route, nor run.
$q->(q{CREATE FOREIGN TABLE users2 (id bigint, name text) SERVER pico
       OPTIONS (table_name 'users', sharding_key 'id')});
$q->('ALTER SYSTEM SET picoroute.max_connections_per_instance = 1');
$q->('SELECT pg_reload_conf()');
ok(wait_for($node, 'SHOW picoroute.max_connections_per_instance', '1', 10), 'a budget of one');
# a's first use of the table (its declaration checked against the cluster) before the budget
# bites: what is left for the keyed read is the route check.
is($s->query_safe('SELECT count(*) FROM users2'), '110', 'a reads users2 without a key');
$s->query_safe('SELECT picoroute_disconnect_all()');
my $b = $node->background_psql('postgres', on_error_stop => 0);
$b->query_safe('BEGIN; SELECT count(*) FROM users_m');
is($q->(q{SELECT count(*) FILTER (WHERE connections_open = 1), max(connections_open)
          FROM picoroute_stat_instances WHERE connections_open > 0}),
    scalar(@masters) . '|1', 'b holds one connection to each master');
$q->('SELECT picoroute_stat_reset()');
$s->query("SET picoroute.failover_wait = '500ms'; SELECT name FROM users2 WHERE id = 1");
like($s->{stderr}, qr/max_connections_per_instance is 1/, 'a finds no place under the budget');
$s->{stderr} = '';
is($q->(q{SELECT state, detail ~ 'too many connections' FROM picoroute_route_checks
          WHERE foreign_table = 'public.users2'}),
    'unknown|t', 'the route check waited for a place too, and says why it did not conclude');
is($q->(q{SELECT sum(connections_opened), max(connections_open) FROM picoroute_stat_instances}),
    '0|1', 'no connection was opened beyond the budget');
$b->query_safe('COMMIT');
$b->quit;
is($s->query_safe("RESET picoroute.failover_wait; SELECT name FROM users2 WHERE id = 1"), 'name_1',
    'once b is gone, a reads');
is($q->(q{SELECT coalesce(max(connections_open), 0) <= 1 FROM picoroute_stat_instances}), 't',
    'within the budget');
$q->('ALTER SYSTEM RESET picoroute.max_connections_per_instance');
$q->('SELECT pg_reload_conf()');
ok(wait_for($node, 'SHOW picoroute.max_connections_per_instance', '0', 10), 'no budget again');

# ---- a bucket move: a stale map costs a hop, not an error --------------------------------------
# The map is refreshed only on request here (refresh_interval 1h): after the move the read still
# goes to the old owner, which answers it through Picodata's own routing; after a refresh, to the
# new owner. Each is counted where it went, with no error. A new map makes the session check its
# table's declaration again at its next use: one catalog read through a coordinator.
my $moved = emu_json('locate', 'users', '--key', '[7]');
my $move_to = $moved->{replicaset} eq 'default_1' ? 'default_2' : 'default_1';
my $before_move = master_address(7);
emu('move', 'default', $moved->{bucket_id}, $moved->{bucket_id}, $move_to);
my $after_move = $address_of{ (grep { $_->{name} eq $move_to }
    @{ emu_json('status', '--json')->{replicasets} })[0]{master} };
isnt($after_move, $before_move, "bucket $moved->{bucket_id} moved to $move_to");
$q->('SELECT picoroute_stat_reset()');
is($s->query_safe('SELECT name FROM users WHERE id = 7'), 'name_7', 'read with the stale map');
$q->('SELECT picoroute_refresh(10000)');
is($s->query_safe('SELECT name FROM users WHERE id = 7'), 'name_7', 'read after the refresh');
$st = stats_of();
is($st->{$before_move}{routed_statements} // 0, 1,
    "$before_move (the old owner): the read with the stale map");
is($st->{$after_move}{routed_statements} // 0, 1,
    "$after_move (the new owner): the read after the refresh");
is(join(',', map { total($st, $_) } qw(statements routed_statements coordinator_statements answers
    rows_received refused_errors remote_errors connection_errors resent_statements failover_waits)),
    '3,2,1,3,3,0,0,0,0,0',
    'the two reads and the declaration check, all answered; no error, nothing sent again')
  or diag($q->('SELECT * FROM picoroute_stat_instances WHERE statements > 0'));
emu('move', 'default', $moved->{bucket_id}, $moved->{bucket_id}, $moved->{replicaset});
$q->('SELECT picoroute_refresh(10000)');
# The declaration check that new map brings happens here, before the next reset.
is($s->query_safe('SELECT name FROM users WHERE id = 7'), 'name_7', 'read after the move back');

# ---- a write refused by a demoted master, sent again after a failover wait ----------------------
my $key1 = (grep { emu_json('locate', 'users', '--key', "[$_]")->{master} eq 'default_1_1' } 1 .. 100)[0];
my $old = $address_of{default_1_1};
emu('switch-master', 'default_1');
my $new = $address_of{ (grep { $_->{name} eq 'default_1' } @{ emu_json('status', '--json')->{replicasets} })[0]{master} };
isnt($new, $old, 'the master of default_1 switched (the map still names the old one)');
$q->('SELECT picoroute_stat_reset()');
$s->query_safe("UPDATE users SET name = 'moved' WHERE id = $key1");
$st = stats_of();
# The failover sends it again until the map names the new master: to the old one as long as the
# refreshed map still shows it there (each time refused again), then to the new one.
my $at_old = $st->{$old}{routed_statements};
cmp_ok($at_old, '>=', 1, "$old: the write went there $at_old time(s)");
is(join(',', map { $st->{$old}{$_} } qw(answers refused_errors failover_waits)),
    "$at_old,$at_old,1", "$old: each answered with a refusal; one failover wait");
is(join(',', map { $st->{$new}{$_} } qw(routed_statements answers refused_errors failover_waits)),
    '1,1,0,0', "$new: the write ran there once");
is(total($st, 'resent_statements'), $at_old, 'every send after the first counted as sent again');
is(total($st, 'statements'), $at_old + 1, 'and nothing else was sent');
is($q->(q{SELECT direct_modifies, statements, routed_statements, rows_written FROM picoroute_stat_tables
          WHERE relname = 'users'}), join('|', 1, $at_old + 1, $at_old + 1, 1),
    'picoroute_stat_tables: one direct modify, its statements, one row written');

# ---- a master that refuses connections ------------------------------------------------------------
# A masters scatter is never sent again: the stopped master's refusal fails it. The scan's stream
# finds the master unreachable, then runs the statement the buffered way, which finds it again.
$q->('SELECT picoroute_refresh(10000)');
my $stopped = $address_of{default_2_1};
emu('stop', 'default_2_1');
$q->('SELECT picoroute_stat_reset()');
$s->query('SELECT count(*) FROM users_m');
like($s->{stderr}, qr/ERROR/, 'the masters scatter fails');
$s->{stderr} = '';
$st = stats_of();
is(join(',', map { $st->{$stopped}{$_} // 0 } qw(statements answers failover_waits)),
    '0,0,0', "$stopped: no statement sent, nothing answered, no failover wait (a scatter is final)");
# Each attempt to connect is one error: the stream's, then its buffered run's; some runs count a
# third attempt (which path makes it is not pinned down yet), so the count is 2 or 3.
my $refusals = $st->{$stopped}{connection_errors} // 0;
ok($refusals >= 2 && $refusals <= 3, "$stopped: its refusals counted as connection errors ($refusals)");
is(total($st, 'connection_errors'), $refusals, 'at that instance only');
$s->quit;

$node->stop;
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no process was terminated by a signal');
done_testing();
