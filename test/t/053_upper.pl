# Upper-relation pushdown against the emulator: aggregates with GROUP BY and HAVING, ORDER BY and
# LIMIT (with OFFSET kept local) computed by the cluster return what PostgreSQL computes over the
# same rows, in the local result types; only the groups or the first rows travel (EXPLAIN
# ANALYZE); a key fixed by the WHERE clause (a constant or a parameter) sends the statement to
# the owner; a table scattered to the masters and pushdown_aggregates 'off' fetch the rows.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_private_psql emu_table start_emulator start_routing_node create_servers
  create_foreign_tables);

start_emulator(bucket_count => 900);    # a masters scatter stays within 512 chains

emu_table('users', 'id int8, name text, v int8, i int4, f float8, n numeric(10,2)', rows => 20000);

my $node = start_routing_node(name => 'upper', admin => 1);
create_servers($node, qw(pico pico_m));
create_foreign_tables($node, 'users',
    'id bigint, name text COLLATE "C", v bigint, i integer, f float8, n numeric(10,2)', 'id', qw(pico pico_m));
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE users_off (id bigint, name text COLLATE "C", v bigint, i integer, f float8,
                                n numeric(10,2)) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'id', pushdown_aggregates 'off');
CREATE TABLE loc (id bigint, name text COLLATE "C", v bigint, i integer, f float8, n numeric(10,2));
});
# The same rows, read from the storages around picoroute (each master's private port: the
# Picodata fronts refuse the storage schema), in a local table.
for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
    my @rows = split /\n/,
      emu_private_psql($rs->{master}, 'SELECT id, name, v, i, f, n FROM _picoemu_local.users');
    while (my @chunk = splice(@rows, 0, 2000)) {
        $node->safe_psql('postgres', 'INSERT INTO loc VALUES '
              . join(', ', map { '(' . join(', ', map { "'$_'" } split /\|/, $_, -1) . ')' } @chunk));
    }
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM loc'), '20000', 'local copy has every row');

# Each query, over the foreign table (pushed down, checked by EXPLAIN) and over the local copy.
my @queries = (
    [ 'count(*)', 'SELECT count(*) FROM %s' ],
    [ 'every aggregate, no GROUP BY',
      'SELECT count(v), count(DISTINCT v), sum(v), sum(i), avg(v), avg(i), min(name), max(name), '
      . 'min(f), max(f), sum(f), avg(f), sum(n), avg(n), min(n), max(id) FROM %s' ],
    [ 'GROUP BY with count/sum/avg, ordered here', 'SELECT v, count(*), sum(i), avg(f), max(name) '
      . 'FROM %s GROUP BY v ORDER BY v' ],
    [ 'GROUP BY an expression, WHERE pushed', 'SELECT i - 500, count(*), sum(id), min(f) FROM %s '
      . 'WHERE id > 5000 GROUP BY i - 500 ORDER BY 1' ],
    [ 'HAVING', 'SELECT v, count(*), sum(id) FROM %s GROUP BY v HAVING sum(id) > 210000 '
      . 'AND count(*) >= 20 ORDER BY v' ],
    [ 'ORDER BY an aggregate LIMIT', 'SELECT v, sum(id) FROM %s GROUP BY v '
      . 'ORDER BY sum(id) DESC, v LIMIT 10' ],
    [ 'ORDER BY columns LIMIT', 'SELECT id, v, name FROM %s ORDER BY v DESC, id LIMIT 5' ],
    [ 'ORDER BY text (C) LIMIT', 'SELECT id, name FROM %s ORDER BY name DESC LIMIT 7' ],
    [ 'LIMIT with OFFSET', 'SELECT id, v FROM %s ORDER BY v, id LIMIT 5 OFFSET 20' ],
    [ 'OFFSET past the groups', 'SELECT v, count(*) FROM %s GROUP BY v ORDER BY v LIMIT 5 OFFSET 998' ],
    [ 'aggregates of a fixed key', 'SELECT count(*), sum(v), avg(f), max(name) FROM %s WHERE id = 777' ],
    [ 'aggregates of no row', 'SELECT count(*), sum(v), avg(f), max(name) FROM %s WHERE id < 0' ],
    [ 'expression over aggregates', 'SELECT v, sum(i) * 2 + count(*), avg(n) / 3 FROM %s '
      . 'WHERE v < 20 GROUP BY v ORDER BY v' ],
);
for my $q (@queries) {
    my ($name, $sql) = @$q;
    my $pushed = sprintf($sql, 'users');
    my $plan = $node->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $pushed");
    # Nothing of the query is computed here but expressions over the pushed values and the sort
    # of a plain GROUP BY result: the Foreign Scan is the top node or right under a Sort. (Under
    # it, a pushed ORDER BY or LIMIT carries the local plan of an answer over the row bound.)
    (my $pushed_part = $plan) =~ s/\n\s*Over the Row Bound: .*//s;
    unlike($pushed_part, qr/Aggregate|Limit|Group\b/, "$name: aggregates and limit pushed down")
      or diag($plan);
    is($node->safe_psql('postgres', $pushed), $node->safe_psql('postgres', sprintf($sql, 'loc')),
       "$name: same result as computed locally");
}

# The local result types: count is bigint, sum of integer bigint, sum of bigint and avg numeric.
is($node->safe_psql('postgres',
       'SELECT pg_typeof(count(*)), pg_typeof(sum(i)), pg_typeof(sum(v)), pg_typeof(avg(v)), '
     . 'pg_typeof(avg(f)) FROM users'),
   'bigint|bigint|numeric|numeric|double precision', 'results in the local types');

# Few rows fetched: the Foreign Scan returns the groups or the first rows, not 20,000 rows.
sub scan_rows {
    my ($sql) = @_;
    my $plan = $node->safe_psql('postgres', "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $sql");
    return $plan =~ /Foreign Scan[^\n]*actual rows=(\d+)/ ? $1 : "none in: $plan";
}
is(scan_rows('SELECT count(*) FROM users'), '1', 'count(*): one row fetched');
is(scan_rows('SELECT count(*) FROM users_off'), '20000',
   'count(*) with pushdown_aggregates off: every row fetched');
is(scan_rows('SELECT v, count(*) FROM users GROUP BY v'), '1000', 'GROUP BY: one row per group');
is(scan_rows('SELECT id FROM users ORDER BY v DESC, id LIMIT 10'), '10',
   'ORDER BY ... LIMIT 10: ten rows fetched');
is(scan_rows('SELECT id FROM users ORDER BY v DESC, id LIMIT 10 OFFSET 5'), '10',
   'LIMIT 10 OFFSET 5: fifteen fetched, five skipped here');

# A key fixed by the WHERE clause: the owner answers (constant and parameter).
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*), sum(v) FROM users WHERE id = 777'),
     qr/Remote SQL: SELECT count\(\*\), sum\("v"\) FROM "users" WHERE \("id" = 777\)\n.*Routing: bucket \d+ -> /s,
     'fixed key: sent to the owner, without a bucket filter');
my $prepared = $node->safe_psql('postgres', q{
SET plan_cache_mode = force_generic_plan;
PREPARE p(bigint) AS SELECT count(*), sum(v), max(name) FROM users WHERE id = $1;
EXECUTE p(1); EXECUTE p(2); EXECUTE p(19999); EXECUTE p(-4);
});
is($prepared, join("\n", map {
        $node->safe_psql('postgres', "SELECT count(*), sum(v), max(name) FROM loc WHERE id = $_")
    } (1, 2, 19999, -4)), 'generic plan: the key from a parameter routes each execution');

# A table scattered to the masters aggregates locally over the masters' rows.
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM users_m'),
   $node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM loc'), "scatter 'masters': same answer");
like($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*) FROM users_m'),
     qr/Aggregate.*scatter to the 2 masters/s, "scatter 'masters': aggregated here");

# Left local, still right: a WHERE clause evaluated here, an aggregate Picodata lacks.
is($node->safe_psql('postgres', 'SELECT count(*), stddev(v)::numeric(20,6) FROM users WHERE abs(v - 500) < 10'),
   $node->safe_psql('postgres', 'SELECT count(*), stddev(v)::numeric(20,6) FROM loc WHERE abs(v - 500) < 10'),
   'local aggregation over pushed rows');

done_testing();
