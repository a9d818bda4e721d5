# picoroute_exec / picoroute_exec_all with parameters, picoroute_exec_masters (each row once, also
# while a replicaset owns no buckets), and ANALYZE of foreign tables through the cluster.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_table start_emulator start_routing_node create_servers wait_for);

start_emulator(replicasets => 2, replication_factor => 1);

my $nrows = 20000;
emu_table('users', 'id int8, name text, v int8', rows => $nrows);
emu_table('small', 'id int8, name text', rows => 500);
emu_table('notes', 'id int8, body text, n int8');
emu_table('countries', 'code text, name text', args => ['--global']);
emu('insert', 'countries', '--values', q{["fr", "France"]}, '--values', q{["it", "Italy"]},
    '--values', q{["pt", "Portugal"]});

# The server carries exec_options() (create_servers): whether the emulated instances take
# Picodata's OPTION clause (ANALYZE sends one only when the server's execution_options is on). An
# emulator with a dialect front keeps an audit of rejected statements.
my $front = eval { emu('audit'); 1 } ? 1 : 0;

my $node = start_routing_node(name => 'exec_params', refresh_interval => '300ms', map_timeout => 20);

sub q1 { return $node->safe_psql('postgres', $_[0]); }
sub fails {
    my ($sql, $pattern, $what) = @_;
    my ($ret, $out, $err) = $node->psql('postgres', $sql);
    isnt($ret, 0, "$what: fails");
    like($err, $pattern, "$what: error");
}

# Expected figures from the emulator's deterministic data: v = (7 * id) % 1000.
my $v_below_10 = scalar grep { (7 * $_) % 1000 < 10 } 1 .. $nrows;

# ---- picoroute_exec with parameters ------------------------------------------------------------
is(q1(q{SELECT name FROM picoroute_exec('default', picoroute_bucket_id('default', 5::bigint),
        'SELECT "name" FROM "users" WHERE "id" = $1', ARRAY['5']) AS t(name text)}),
   'name_5', 'exec: one parameter');
is(q1(q{SELECT name FROM picoroute_exec('default', picoroute_bucket_id('default', 5::bigint),
        'SELECT "name" FROM "users" WHERE "id" = $1 AND "v" = $2', ARRAY['5', '35'], true)
        AS t(name text)}),
   'name_5', 'exec: two parameters, read_only');
is(q1(q{SELECT count(*) FROM picoroute_exec('default', 1,
        'SELECT "id" FROM "users" WHERE "id" = $1 AND "v" = $2', ARRAY['5', '36']) AS t(id bigint)}),
   '0', 'exec: the second parameter filters');

# NULL elements are NULL values.
for my $id (1, 2, 3) {
    q1(qq{SELECT * FROM picoroute_exec('default', picoroute_bucket_id('default', ${id}::bigint),
          'INSERT INTO "notes" ("id", "body", "n") VALUES (\$1, \$2, \$3)',
          ARRAY['$id', NULL, NULL]) AS t(x int)});
}
is(q1(q{SELECT count(*) FROM picoroute_exec_masters('default',
        'SELECT "id" FROM "notes" WHERE "body" IS NULL AND "n" IS NULL AND {buckets}') AS t(id bigint)}),
   '3', 'exec: NULL parameters stored as NULL');
is(q1(q{SELECT count(*) FROM picoroute_exec('default', 1,
        'SELECT "id" FROM "notes" WHERE "body" = $1', ARRAY[NULL]) AS t(id bigint)}),
   '0', 'exec: a NULL parameter compares as NULL');

# Values never become statement text: injection attempts are stored and compared verbatim.
my @evil = (q{x'); DELETE FROM "notes"; --}, q{' OR '1'='1}, q{$1}, q{{buckets}}, q{"; DROP TABLE "notes"; --});
my $i = 10;
for my $value (@evil) {
    (my $lit = $value) =~ s/'/''/g;
    q1(qq{SELECT * FROM picoroute_exec('default', picoroute_bucket_id('default', ${i}::bigint),
          'INSERT INTO "notes" ("id", "body", "n") VALUES (\$1, \$2, \$3)', ARRAY['$i', '$lit', '1'])
          AS t(x int)});
    is(q1(qq{SELECT body FROM picoroute_exec('default', picoroute_bucket_id('default', ${i}::bigint),
             'SELECT "body" FROM "notes" WHERE "id" = \$1', ARRAY['$i']) AS t(body text)}),
       $value, "exec: value stored verbatim: $value");
    $i++;
}
is(q1(q{SELECT count(*) FROM picoroute_exec_masters('default', 'SELECT "id" FROM "notes" WHERE {buckets}')
        AS t(id bigint)}),
   3 + scalar(@evil), 'exec: no injected statement ran (every row still there)');
is(q1(q{SELECT count(*) FROM picoroute_exec('default', 1,
        'SELECT "id" FROM "users" WHERE "name" = $1 OPTION (sql_vdbe_opcode_max = 0)', ARRAY[$$' OR '1'='1$$])
        AS t(id bigint)}),
   '0', 'exec: a quote in a value matches nothing');

# Wrong counts never reach the cluster.
fails(q{SELECT * FROM picoroute_exec('default', 1, 'SELECT "id" FROM "users" WHERE "id" = $1') AS t(id bigint)},
      qr/the query refers to \$1 but 0 values were given.*\nHINT:  Pass the values in a text array/s,
      'exec: $1 without values');
fails(q{SELECT * FROM picoroute_exec('default', 1, 'SELECT "id" FROM "users" WHERE "id" = $1', ARRAY['1', '2']) AS t(id bigint)},
      qr/2 values were given but the query refers to parameters up to \$1/, 'exec: too many values');
fails(q{SELECT * FROM picoroute_exec_all('default', 'SELECT "id" FROM "users" WHERE "id" = $2', ARRAY['1']) AS t(id bigint)},
      qr/the query refers to \$2 but 1 value was given/, 'exec_all: too few values');
# A value the server cannot read as the parameter's type: the server's error, with its SQLSTATE.
fails(q{\set VERBOSITY verbose
SELECT * FROM picoroute_exec('default', 1, 'SELECT "id" FROM "users" WHERE "id" = $1', ARRAY['five']) AS t(id bigint)},
      qr/ERROR:  22P02: /, 'exec: a value of the wrong type is refused by the server');

# ---- picoroute_exec_all and picoroute_exec_masters -----------------------------------------------
# Whole-table counts scan every storage: like any such Picodata statement, they lift the per-storage
# work limit themselves.
my $per_master = q1(q{SELECT string_agg(n::text, ',') FROM picoroute_exec_all('default',
    'SELECT count(*) FROM "users" WHERE "v" < $1 OPTION (sql_vdbe_opcode_max = 0)', ARRAY['10']) AS t(n bigint)});
is($per_master, "$v_below_10,$v_below_10", 'exec_all: every master answers for the whole cluster');
is(q1(q{SELECT count(*), sum(n) FROM picoroute_exec_masters('default', 'SELECT count(*) FROM "users" WHERE {buckets} OPTION (sql_vdbe_opcode_max = 0)') AS t(n bigint)}),
   "2|$nrows", 'exec_masters: one answer per master, each row counted once');
is(q1(q{SELECT sum(n) FROM picoroute_exec_masters('default',
        'SELECT count(*) FROM "users" WHERE "v" < $1 AND {buckets} OPTION (sql_vdbe_opcode_max = 0)', ARRAY['10']) AS t(n bigint)}),
   $v_below_10, 'exec_masters: with a parameter');
is(q1(q{SELECT count(*), count(DISTINCT id), sum(id) FROM picoroute_exec_masters('default',
        'SELECT "u"."id" FROM "small" "u" WHERE {buckets:"u"}') AS t(id bigint)}),
   '500|500|125250', 'exec_masters: each row once, qualified placeholder');

# A replicaset that owns no buckets (before the rebalance) gets nothing; after it, its share.
emu('add-replicaset', '--replication-factor', '1', '--no-rebalance');
ok(wait_for($node, 'SELECT count(*) FROM picoroute_replicasets', '3', 20), 'new replicaset in the map');
is(q1(q{SELECT count(*), sum(n) FROM picoroute_exec_all('default', 'SELECT count(*) FROM "users" OPTION (sql_vdbe_opcode_max = 0)') AS t(n bigint)}),
   '2|' . 2 * $nrows, 'exec_all: a master without buckets is not asked; each other answers for the whole cluster');
is(q1(q{SELECT count(*), sum(n) FROM picoroute_exec_masters('default', 'SELECT count(*) FROM "users" WHERE {buckets} OPTION (sql_vdbe_opcode_max = 0)') AS t(n bigint)}),
   "2|$nrows", 'exec_masters: the master without buckets gets nothing, no row twice');
emu('rebalance');
ok(wait_for($node, "SELECT count(DISTINCT replicaset_uuid) FROM picoroute_buckets WHERE tier = 'default'", '3', 20),
   'rebalanced map loaded');
is(q1(q{SELECT count(*), sum(n) FROM picoroute_exec_masters('default', 'SELECT count(*) FROM "users" WHERE {buckets} OPTION (sql_vdbe_opcode_max = 0)') AS t(n bigint)}),
   "3|$nrows", 'exec_masters after the rebalance: three masters, each row once');
is(q1(q{SELECT count(*), count(DISTINCT id) FROM picoroute_exec_masters('default', 'SELECT "id" FROM "small" WHERE {buckets}') AS t(id bigint)}),
   '500|500', 'exec_masters after the rebalance: ids once');

# ---- ANALYZE ------------------------------------------------------------------------------------
create_servers($node, 'pico');
q1(qq{
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE countries (code text, name text) SERVER pico OPTIONS (distribution 'global');
});
q1(q{CREATE FUNCTION plan_rows(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
  RETURN (plan->0->'Plan'->>'Plan Rows')::float8;
END $$;});
is(q1(q{SELECT plan_rows('SELECT * FROM users')}), '1000', 'before ANALYZE: the fixed estimate');

# The default statistics target asks for 30,000 rows: the whole table is read.
my ($ret, $out, $err) = $node->psql('postgres', 'ANALYZE VERBOSE users');
is($ret, 0, 'ANALYZE of a sharded table');
like($err, qr/"users": $nrows rows in Picodata; $nrows rows read, $nrows in the sample/,
     'ANALYZE VERBOSE: count and whole-table sample');
is(q1(q{SELECT reltuples FROM pg_class WHERE relname = 'users'}), $nrows, 'reltuples is the row count');
is(q1(q{SELECT plan_rows('SELECT * FROM users')}), $nrows, 'the planner estimates every row');
is(q1(q{SELECT n_distinct FROM pg_stats WHERE tablename = 'users' AND attname = 'v'}), '1000',
   'column statistics from the sample (v has 1000 values)');
my $est = q1(q{SELECT plan_rows('SELECT * FROM users WHERE v = 5')});
ok($est >= 10 && $est <= 40, "estimate of v = 5 is about 20 (got $est)");

# A smaller target: a sample of random buckets, cut down locally to 3,000 rows.
($ret, $out, $err) = $node->psql('postgres', "SET default_statistics_target = 10;\nANALYZE VERBOSE users");
is($ret, 0, 'ANALYZE with a bucket sample');
like($err, qr/"users": $nrows rows in Picodata; (\d+) rows read from 540 of 3000 buckets, 3000 in the sample/,
     'ANALYZE VERBOSE: 540 random buckets read, 3000 rows kept');
my ($read) = $err =~ /(\d+) rows read from/;
ok(defined $read && $read > 3000 && $read < 5000, 'the bucket sample holds about 1.2 x 3000 rows (' . ($read // '?') . ')');
is(q1(q{SELECT reltuples FROM pg_class WHERE relname = 'users'}), $nrows, 'reltuples is still the exact count');
my $nd = q1(q{SELECT n_distinct FROM pg_stats WHERE tablename = 'users' AND attname = 'v'});
ok($nd >= 800 && $nd <= 1200, "n_distinct of v from the bucket sample is near 1000 (got $nd)");
is(q1(q{SELECT n_distinct FROM pg_stats WHERE tablename = 'users' AND attname = 'id'}), '-1',
   'id is seen as unique');

# The count follows the data.
q1(q{INSERT INTO users SELECT g, 'more', 1 FROM generate_series(100001, 101000) g});
q1('ANALYZE users');
is(q1(q{SELECT reltuples FROM pg_class WHERE relname = 'users'}), $nrows + 1000, 'ANALYZE after 1000 inserts');

# A global table.
($ret, $out, $err) = $node->psql('postgres', 'ANALYZE VERBOSE countries');
like($err, qr/"countries": 3 rows in Picodata; 3 rows read, 3 in the sample/, 'ANALYZE of a global table');
is(q1(q{SELECT reltuples, (SELECT n_distinct FROM pg_stats WHERE tablename = 'countries' AND attname = 'code')
        FROM pg_class WHERE relname = 'countries'}), '3|-1', 'global table statistics');

if ($front) {
    is(eval { emu('audit'); 'clean' } // $@, 'clean', 'the front rejected no statement');
}

$node->stop;
done_testing();
