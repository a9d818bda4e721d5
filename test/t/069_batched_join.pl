# Batched joins of a local table with a picoroute foreign table on its sharding key, against the
# emulator: the planner picks the batched join (EXPLAIN shows the Custom Scan with its batch size and
# remote SQL), which reads the outer rows in batches and sends each batch's distinct keys as IN lists,
# one statement per owning instance. Its rows are those of the lookup per outer row
# (picoroute.join_batch_size = 0) and those PostgreSQL computes over a local copy, for 500 outer
# rows (10 batches of 50) with duplicate, NULL and absent keys, inner, left, semi and anti joins,
# bigint, text, varchar and uuid keys, more conditions on both sides, expressions, a prepared statement, rescans of a subquery, a PL/pgSQL
# loop, and a bucket moved between two executions and in the middle of one. A composite sharding key
# gets no batched join. EXPLAIN ANALYZE counts the batches and the statements: one per owner per
# batch instead of one per outer row. The key compared with an array known only at execution (an
# array of a subquery, a bound array in a generic plan) goes the same way, as key lists by owner.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu_command emu_json emu_private_psql emu_table start_emulator start_routing_node
  create_servers create_foreign_tables define_move_at);

# The fronts log every statement they receive (counted below).
$ENV{PICOEMU_LOG_STATEMENTS} = '1';
my $dir = start_emulator(replicasets => 2, replication_factor => 1);
emu_table('users', 'id int8, name text, v int8', rows => 20000);
emu_table('tusers', 'code text, id int8, note text', rows => 3000);
emu_table('uusers', 'u uuid, id int8, note text', rows => 3000);
emu_table('pairs', 'a text, b int8, note text', rows => 2000, args => [ '--sharding-key', 'a,b' ]);

my $node = start_routing_node(name => 'batch', admin => 1, refresh_interval => '300ms');
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', 'pico');
create_foreign_tables($node, 'tusers', 'code text, id bigint, note text', 'code', 'pico');
create_foreign_tables($node, 'uusers', 'u uuid, id bigint, note text', 'u', 'pico');
$node->safe_psql('postgres', "CREATE FOREIGN TABLE vusers (code varchar(20), id bigint, note text) SERVER pico "
    . "OPTIONS (table_name 'tusers', sharding_key 'code')");
create_foreign_tables($node, 'pairs', 'a text, b bigint, note text', 'a, b', 'pico');

# Local copies of every table, read from the storages around picoroute.
my %columns = (users => 'id, name, v', tusers => 'code, id, note', uusers => 'u, id, note',
               pairs => 'a, b, note');
my %types = (users => 'id bigint, name text, v bigint', tusers => 'code text, id bigint, note text',
             uusers => 'u uuid, id bigint, note text', pairs => 'a text, b bigint, note text');
for my $t (sort keys %columns) {
    $node->safe_psql('postgres', "CREATE TABLE loc_$t ($types{$t})");
    for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
        my @rows = split /\n/,
          emu_private_psql($rs->{master}, "SELECT $columns{$t} FROM _picoemu_local.$t");
        while (my @chunk = splice(@rows, 0, 2000)) {
            $node->safe_psql('postgres', "INSERT INTO loc_$t VALUES "
                  . join(', ', map { '(' . join(', ', map { "'$_'" } split /\|/, $_, -1) . ')' } @chunk));
        }
    }
}
$node->safe_psql('postgres',
    'CREATE TABLE loc_vusers AS SELECT code::varchar(20) AS code, id, note FROM loc_tusers');
is($node->safe_psql('postgres', 'SELECT count(*) FROM loc_users'), '20000', 'local copy of users');

# 500 outer rows: 440 keys that exist, 20 that do not, 20 NULL, 20 repeating earlier keys; the
# text and uuid columns name rows of tusers and uusers (some absent, NULL with the NULL keys).
$node->safe_psql('postgres', q{
CREATE TABLE keys (ord int, k bigint, t text, u uuid, tv varchar(20));
WITH base AS (
  SELECT g AS ord, g * 197 % 20000 + 1 AS k FROM generate_series(1, 440) g
  UNION ALL SELECT 440 + g, 30000 + g FROM generate_series(1, 20) g
  UNION ALL SELECT 460 + g, NULL FROM generate_series(1, 20) g
  UNION ALL SELECT 480 + g, g * 11 * 197 % 20000 + 1 FROM generate_series(1, 20) g),
uu AS (SELECT u, row_number() OVER (ORDER BY u) AS rn FROM loc_uusers)
INSERT INTO keys
  SELECT b.ord, b.k, 'code_' || (b.k % 3500),
         CASE WHEN b.ord BETWEEN 441 AND 460 THEN gen_random_uuid() ELSE uu.u END
  FROM base b LEFT JOIN uu ON uu.rn = b.k % 3500 ORDER BY b.ord;
UPDATE keys SET tv = t;
ANALYZE keys;
ANALYZE users; ANALYZE tusers; ANALYZE vusers; ANALYZE uusers; ANALYZE pairs;
});
is($node->safe_psql('postgres', 'SELECT count(*), count(k), count(DISTINCT k) FROM keys'),
   '500|480|460', '500 outer rows: 20 NULL, 20 repeated');

# The rows of a query, sorted here (the plans compared need not give one order).
sub sorted_rows {
    my ($sql) = @_;
    return join("\n", sort split /\n/, $node->safe_psql('postgres', $sql));
}

my $batch = 'SET picoroute.join_batch_size = 50;';
# Each kind of join executed batched: a filter can make one scan of the table and a hash join the
# cheaper plan for 500 outer rows (a key looked up costs about ten rows of a scan), so the other
# joins are off here; the planner's own choice is checked after the loop.
my $batched = "$batch SET enable_hashjoin = off; SET enable_mergejoin = off;";
# The lookup per outer row: a nested loop (for 500 outer rows the planner would scan the table).
my $per_row = 'SET picoroute.join_batch_size = 0; SET enable_hashjoin = off; SET enable_mergejoin = off;';
my @joins = (
    [ 'bigint key', 'SELECT l.ord, u.id, u.name, u.v FROM keys l JOIN %s u ON u.id = l.k' ],
    [ 'key column first', 'SELECT l.ord, u.name FROM keys l JOIN %s u ON l.k = u.id' ],
    [ 'more conditions on both sides',
      'SELECT l.ord, u.v FROM keys l JOIN %s u ON u.id = l.k AND u.v <> l.ord '
      . "WHERE u.name LIKE 'name_1%%' AND l.ord %% 3 <> 0" ],
    [ 'a condition evaluated here', "SELECT l.ord, u.id FROM keys l JOIN %s u ON u.id = l.k WHERE u.name ~ '7\$'" ],
    [ 'expressions', 'SELECT l.ord * 2, u.v + l.ord, upper(u.name), l.k = u.id FROM keys l JOIN %s u ON u.id = l.k' ],
    [ 'aggregates over the join', 'SELECT count(*), sum(u.v), count(DISTINCT u.id) FROM keys l JOIN %s u ON u.id = l.k' ],
    [ 'left join', 'SELECT l.ord, u.id, u.name FROM keys l LEFT JOIN %s u ON u.id = l.k' ],
    [ 'left join, more conditions in ON',
      'SELECT l.ord, u.id, u.v FROM keys l LEFT JOIN %s u ON u.id = l.k AND u.v <> l.ord %% 1000 '
      . "AND u.name LIKE 'name_1%%'" ],
    [ 'left join, a condition of the table evaluated here',
      "SELECT l.ord, u.id FROM keys l LEFT JOIN %s u ON u.id = l.k AND u.name ~ '7\$'" ],
    [ 'left join filtered above', 'SELECT l.ord, u.v FROM keys l LEFT JOIN %s u ON u.id = l.k '
      . 'WHERE coalesce(u.v, -1) <> l.ord %% 7' ],
    [ 'semi join', 'SELECT l.ord FROM keys l WHERE EXISTS (SELECT 1 FROM %s u WHERE u.id = l.k AND u.v > 300)' ],
    [ 'anti join', 'SELECT l.ord, l.k FROM keys l WHERE NOT EXISTS (SELECT 1 FROM %s u WHERE u.id = l.k AND u.v > 300)' ],
    [ 'outer side a join', 'SELECT a.ord, b.ord, u.v FROM keys a JOIN keys b ON b.ord = a.ord + 1 '
      . 'JOIN %s u ON u.id = a.k' ],
);
my @text_joins = (
    [ 'text key', 'SELECT l.ord, t.code, t.note FROM keys l JOIN %s t ON t.code = l.t', 'tusers' ],
    [ 'text key, left join', 'SELECT l.ord, t.code, t.note FROM keys l LEFT JOIN %s t ON t.code = l.t', 'tusers' ],
    [ 'varchar key', 'SELECT l.ord, t.code, t.note FROM keys l JOIN %s t ON t.code = l.tv', 'vusers' ],
    [ 'uuid key', 'SELECT l.ord, x.u, x.id FROM keys l JOIN %s x ON x.u = l.u', 'uusers' ],
);
for my $j (@joins, @text_joins) {
    my ($name, $sql, $table) = @$j;
    $table //= 'users';
    my $remote = sprintf($sql, $table);
    my $plan = $node->safe_psql('postgres', "$batched EXPLAIN (VERBOSE, COSTS OFF) $remote");
    my $kind = $name =~ /left join/ ? 'Left' : $name =~ /semi join/ ? 'Semi' : $name =~ /anti join/ ? 'Anti' : 'Inner';
    like($plan, qr/Custom Scan \(PicorouteBatchedJoin\).*Join Type: $kind.*Batch Size: 50.*Remote SQL: SELECT [^\n]* IN \(\$\d+, \.\.\.\)/s,
         "$name: a batched join") or diag($plan);
    my $got = sorted_rows("$batched $remote");
    is($got, sorted_rows("$per_row $remote"), "$name: same rows as a lookup per row");
    (my $local = $remote) =~ s/ $table ([utx])\b/ loc_$table $1/g;
    is($got, sorted_rows($local), "$name: same rows as computed locally");
}
isnt($node->safe_psql('postgres', sprintf($text_joins[-1][1], 'uusers')), '', 'the uuid join found rows');
# The planner's choice by cost: 500 outer keys against the 20,000 rows of users take the batched
# join; 20,000 take one scan of the table and a hash join.
like($node->safe_psql('postgres', "$batch EXPLAIN (COSTS OFF) " . sprintf($joins[0][1], 'users')),
     qr/Custom Scan \(PicorouteBatchedJoin\)/, 'the planner picks the batched join for 500 keys');
like($node->safe_psql('postgres', "$batch EXPLAIN (COSTS OFF) SELECT count(*) FROM "
                      . 'generate_series(1, 20000) g(k) JOIN users u ON u.id = g.k'),
     qr/(Hash|Merge) Join/, 'and one scan for as many keys as the table has rows');

# One statement per owner per batch: 10 batches of 50 outer rows, each batch's keys on both
# replicasets. The lookup per row sends one statement per outer row (or per distinct key).
my $analyzed = $node->safe_psql('postgres',
    "$batch EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT u.name FROM keys l JOIN users u ON u.id = l.k");
like($analyzed, qr/Batches: 10\b/, '10 batches of 50 outer rows') or diag($analyzed);
my ($statements) = $analyzed =~ /Remote Statements: (\d+)/;
is($statements, 20, 'one statement per replicaset per batch') or diag($analyzed);
like($analyzed, qr/Last Batch: \d+ keys: 2 statements to 2 instances/, 'EXPLAIN ANALYZE shows the owners of the last batch')
  or diag($analyzed);
like($analyzed, qr/Remote Rows: 460\b/, 'each distinct key fetched once per batch (20 again in the last)') or diag($analyzed);
# The same counted by the fronts (every statement sent unnamed, so that each is logged with its
# text): 10 per replicaset master, each with that master's keys only.
my $status = emu_json('status', '--json');
my @logs = map { "$dir/$_->{name}/front.log" } @{ $status->{instances} };
my %offset = map { $_ => (-s $_ // 0) } @logs;
sub received {
    my ($pattern) = @_;
    my %count;
    for my $log (@logs) {
        open(my $fh, '<', $log) or next;
        seek($fh, $offset{$log}, 0);
        my ($name) = $log =~ m{/([^/]+)/front\.log$};
        $count{$name} = scalar grep { /statement: .*$pattern/ } <$fh>;
        $offset{$log} = tell($fh);
        close($fh);
    }
    return join(',', map { $count{$_} } sort grep { $count{$_} } keys %count);
}
my $unnamed = 'SET picoroute.remote_statement_cache_size = 0;';
$node->safe_psql('postgres', "$unnamed $batch SELECT u.name FROM keys l JOIN users u ON u.id = l.k");
is(received(qr/FROM "users" WHERE "id" IN \(/), '10,10', 'the fronts received 10 statements per master');
$node->safe_psql('postgres', "$unnamed $per_row SELECT u.name FROM keys l JOIN users u ON u.id = l.k");
my @per_row = split /,/, received(qr/FROM "users" WHERE \("id" = \$1\)/);
my $sum = 0;
$sum += $_ for @per_row;
ok($sum >= 460, "the lookup per row: a statement per distinct key at least ($sum)");
my $nested = $node->safe_psql('postgres',
    "$per_row EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT u.name FROM keys l JOIN users u ON u.id = l.k");
my ($loops) = $nested =~ /Foreign Scan on users u \(actual rows=\d+ loops=(\d+)\)/;
ok(defined $loops && $loops >= 460, "a lookup per row sends one statement per key (" . ($loops // '?') . ")")
  or diag($nested);
# The default batch size: 500 rows in 2 batches.
like($node->safe_psql('postgres',
    'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT u.name FROM keys l JOIN users u ON u.id = l.k'),
    qr/Batch Size: 256.*Batches: 2\b/s, 'the default batch size is 256');

# A composite sharding key: no batched join (a lookup per row, or a scan).
my $pairs = $node->safe_psql('postgres',
    "$batch EXPLAIN (COSTS OFF) SELECT p.note FROM keys l JOIN pairs p ON p.a = l.t AND p.b = l.k");
unlike($pairs, qr/PicorouteBatchedJoin/, 'a composite sharding key gets no batched join') or diag($pairs);
# Keys of another type than the column (int4 against bigint): no batched join.
my $cast = $node->safe_psql('postgres',
    "$batch EXPLAIN (COSTS OFF) SELECT u.name FROM keys l JOIN users u ON u.id = l.ord");
unlike($cast, qr/PicorouteBatchedJoin/, 'an int4 outer key against a bigint column gets no batched join')
  or diag($cast);

# A prepared statement (its parameter in the remote conditions, its generic plan after 5 runs).
my $prepared = "$batch PREPARE q(int) AS SELECT l.ord, u.v FROM keys l JOIN users u ON u.id = l.k "
  . 'WHERE l.ord <= $1 * 50 AND u.v <> $1 ORDER BY 1, 2;';
my $local_q = 'SELECT l.ord, u.v FROM keys l JOIN loc_users u ON u.id = l.k WHERE l.ord <= %d AND u.v <> %d ORDER BY 1, 2';
my $runs = join('', map { "EXECUTE q($_);" } (1 .. 8));
my $prep_out = $node->safe_psql('postgres', "$prepared $runs");
my $expected = join("\n", grep { $_ ne '' } map { $node->safe_psql('postgres', sprintf($local_q, $_ * 50, $_)) } (1 .. 8));
is($prep_out, $expected, 'a prepared statement, 8 executions (generic plan): same rows as computed locally');
like($node->safe_psql('postgres', "$prepared SET plan_cache_mode = force_generic_plan; EXPLAIN (COSTS OFF) EXECUTE q(3)"),
     qr/PicorouteBatchedJoin.*Remote SQL: [^\n]*<> \$1[^\n]* IN \(\$2, \.\.\.\)/s,
     'the generic plan sends the parameter first, then the keys');

# Rescans: a subquery run once per value of an outer column.
my $rescan = 'SELECT g, (SELECT count(*) || \':\' || coalesce(sum(u.v), 0) FROM keys l JOIN %s u ON u.id = l.k '
  . 'WHERE l.ord %% 5 = g) FROM generate_series(0, 4) g ORDER BY 1';
like($node->safe_psql('postgres', "$batch EXPLAIN (COSTS OFF) " . sprintf($rescan, 'users')),
     qr/SubPlan.*PicorouteBatchedJoin/s, 'a subquery with a batched join') ;
is($node->safe_psql('postgres', $batch . sprintf($rescan, 'users')),
   $node->safe_psql('postgres', sprintf($rescan, 'loc_users')), 'rescans: same rows as computed locally');

# A PL/pgSQL loop over the join, running another join in its body.
$node->safe_psql('postgres', q{
CREATE FUNCTION loop_sum(tab text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; total bigint := 0; n int := 0; inner_n bigint;
BEGIN
  FOR r IN EXECUTE format('SELECT l.ord, u.v FROM keys l JOIN %I u ON u.id = l.k WHERE l.ord <= 300 ORDER BY 1', tab) LOOP
    total := total + r.v; n := n + 1;
    IF n % 100 = 0 THEN
      EXECUTE format('SELECT count(*) FROM keys l JOIN %I u ON u.id = l.k WHERE l.ord > $1 AND l.ord <= $1 + 50', tab)
        INTO inner_n USING r.ord;
      total := total + inner_n;
    END IF;
  END LOOP;
  RETURN n || ':' || total;
END $$;
});
is($node->safe_psql('postgres', "$batch SELECT loop_sum('users')"),
   $node->safe_psql('postgres', "SELECT loop_sum('loc_users')"), 'a PL/pgSQL loop: same rows as computed locally');

# ---- the key compared with an array known only at execution ------------------------------------
# key = ANY(ARRAY(SELECT ...)) and key = ANY($1) in a generic plan: the array's distinct values go
# to their owners as IN lists (at most 512 per statement); the clause is not evaluated here.
my @arrays = (
    [ 'an array of a subquery', 'SELECT u.id, u.name FROM %s u WHERE u.id = ANY(ARRAY(SELECT k FROM keys))', 'users' ],
    [ 'an int4 array against the int8 key',
      'SELECT u.id, u.v FROM %s u WHERE u.id = ANY(ARRAY(SELECT k::int FROM keys))', 'users' ],
    [ 'with a condition sent and one evaluated here',
      "SELECT u.id FROM %s u WHERE u.id = ANY(ARRAY(SELECT k FROM keys)) AND u.v > 300 AND u.name ~ '7\$'", 'users' ],
    [ 'a text key', 'SELECT t.code, t.note FROM %s t WHERE t.code = ANY(ARRAY(SELECT t FROM keys))', 'tusers' ],
    [ 'a uuid key', 'SELECT x.u, x.id FROM %s x WHERE x.u = ANY(ARRAY(SELECT u FROM keys))', 'uusers' ],
);
for my $a (@arrays) {
    my ($name, $sql, $table) = @$a;
    my $remote = sprintf($sql, $table);
    my $plan = $node->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $remote");
    like($plan, qr/Remote SQL: SELECT [^\n]* IN \(\$\d+, \.\.\.\)\n\s+Routing: by sharding key: the distinct values of the array/,
         "$name: sent as key lists") or diag($plan);
    unlike($plan, qr/Filter: [^\n]*ANY/, "$name: the array is not searched here") or diag($plan);
    (my $local = $remote) =~ s/ $table ([utx])\b/ loc_$table $1/g;
    my $got = sorted_rows($remote);
    isnt($got, '', "$name: rows found");
    is($got, sorted_rows($local), "$name: same rows as computed locally");
}
# 3,000 keys: about 1,500 per owner, each owner's in statements of at most 513 keys (the chains
# Picodata still expands, src/core/capabilities.h kDnfMostChains).
my $many = 'SELECT count(*), sum(u.v) FROM users u WHERE u.id = ANY(ARRAY(SELECT id FROM loc_users WHERE id <= 3000))';
my $per_owner = 0;
for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
    my $n = emu_private_psql($rs->{master}, 'SELECT count(*) FROM _picoemu_local.users WHERE id <= 3000');
    $per_owner += int(($n + 512) / 513);
}
my $array_analyzed = $node->safe_psql('postgres', "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $many");
like($array_analyzed, qr/Routing: 3000 keys: $per_owner statements to 2 instances/,
     "3,000 keys: $per_owner statements of at most 513 keys") or diag($array_analyzed);
is($node->safe_psql('postgres', $many),
   $node->safe_psql('postgres', 'SELECT count(*), sum(v) FROM loc_users WHERE id <= 3000'), '3,000 keys: every row');
# A bound array in a generic plan: NULL elements, repeated and absent keys; a NULL array, an empty one.
my $prepare = q{SET plan_cache_mode = force_generic_plan;
PREPARE ak(bigint[]) AS SELECT id, name FROM users WHERE id = ANY($1) ORDER BY id;
};
like($node->safe_psql('postgres', "$prepare EXPLAIN (VERBOSE, COSTS OFF) EXECUTE ak('{1}')"),
     qr/Remote SQL: [^\n]* WHERE "id" IN \(\$1, \.\.\.\)/, 'a generic plan sends the bound array as key lists');
is($node->safe_psql('postgres', "$prepare EXECUTE ak(ARRAY[5, 7, NULL, 7, 30001, 19999]::bigint[])"),
   $node->safe_psql('postgres', 'SELECT id, name FROM loc_users WHERE id IN (5, 7, 19999) ORDER BY id'),
   'a bound array with a NULL, a repeated and an absent key: the rows of the others');
is($node->safe_psql('postgres', "$prepare EXECUTE ak(NULL); EXECUTE ak('{}'); EXECUTE ak('{NULL}')"),
   '', 'a NULL array, an empty one and one of a NULL: no row');

# The query of an INSERT too.
is($node->safe_psql('postgres', q{CREATE TABLE arr_copy AS SELECT id, v FROM users WHERE false;
INSERT INTO arr_copy SELECT id, v FROM users WHERE id = ANY(ARRAY(SELECT k FROM keys));
SELECT count(*), sum(v) FROM arr_copy}),
   $node->safe_psql('postgres', 'SELECT count(*), sum(v) FROM loc_users WHERE id IN (SELECT k FROM keys)'),
   'INSERT ... SELECT by an array of a subquery: the same rows');
# An UPDATE or DELETE with such a clause is not one remote statement (it carries only the clauses
# Picodata evaluates): it is written row by row. The rows deleted are then put back.
my $doomed = 'ARRAY(SELECT k FROM keys WHERE ord <= 3)';
my ($del_rc, $del_out, $del_err) = $node->psql('postgres', "DELETE FROM users WHERE id = ANY($doomed)");
is($del_rc, 0, 'a DELETE by an array of a subquery runs, row by row') or diag($del_err);
is($node->safe_psql('postgres', 'SELECT count(*) FROM users'),
   $node->safe_psql('postgres', "SELECT count(*) FROM loc_users WHERE NOT id = ANY($doomed)"),
   'it deleted the rows of those keys');
$node->safe_psql('postgres', "INSERT INTO users SELECT * FROM loc_users WHERE id = ANY($doomed)");
is($node->safe_psql('postgres', 'SELECT count(*) FROM users'), '20000', 'the rows are back');

# A prepared UPDATE by an array parameter, run more often than the plan cache's five custom plans:
# its generic plan (the clause evaluated here, written row by row) costs too much to be chosen,
# so every execution plans the constant array and runs as one remote statement.
my $prepared_update = "PREPARE pu(bigint[]) AS UPDATE users SET v = v WHERE id = ANY(\$1);\n"
  . join('', map { "EXECUTE pu('{5, 7, 19999, 30001}');\n" } 1 .. 8)
  . "EXPLAIN (COSTS OFF) EXECUTE pu('{5}');\n";
like($node->safe_psql('postgres', $prepared_update), qr/Foreign Update on users/,
     'a prepared UPDATE by an array parameter: eight executions, still one remote statement each');
my ($gen_rc, $gen_out, $gen_err) = $node->psql('postgres',
    "SET plan_cache_mode = force_generic_plan;\n$prepared_update");
is($gen_rc, 0, 'its forced generic plan runs, row by row') or diag($gen_err);
is($node->safe_psql('postgres', 'SELECT count(*), sum(v) FROM users'),
   $node->safe_psql('postgres', 'SELECT count(*), sum(v) FROM loc_users'), 'users unchanged');

# Buckets moved: between two executions, and while the join runs (at outer row 250, between
# batches, the bucket of one key moves to the other replicaset and the map is refreshed).
my $key = 250 * 197 % 20000 + 1;
my $owner = emu_json('locate', 'users', '--key', "[$key]");
my $other = (grep { $_->{name} ne $owner->{replicaset} } @{ emu_json('status', '--json')->{replicasets} })[0];
my $all = 'SELECT l.ord, u.id, u.name FROM keys l JOIN %s u ON u.id = l.k ORDER BY 1, 2';
my $local_all = $node->safe_psql('postgres', sprintf($all, 'loc_users'));
is($node->safe_psql('postgres', $batch . sprintf($all, 'users')), $local_all, 'before the move');
system(join(' ', @{ emu_command('move', 'default', $owner->{bucket_id}, $owner->{bucket_id}, $other->{name}) }) . ' >/dev/null') == 0
  or die 'move failed';
is(sorted_rows(sprintf($arrays[0][1], 'users')), sorted_rows(sprintf($arrays[0][1], 'loc_users')),
   'key lists right after the move (the map may still send the key to its old owner): same rows');
$node->safe_psql('postgres', 'SELECT picoroute_refresh()');
is(emu_json('locate', 'users', '--key', "[$key]")->{replicaset}, $other->{name}, 'the bucket moved');
is($node->safe_psql('postgres', $batch . sprintf($all, 'users')), $local_all, 'after the move: same rows');
define_move_at($node, 'move', 'default', $owner->{bucket_id}, $owner->{bucket_id}, $owner->{replicaset});
my $moving = 'SELECT l.ord, u.id, u.name FROM (SELECT move_at(ord, 225) AS ord, k FROM keys OFFSET 0) l '
  . 'JOIN users u ON u.id = l.k ORDER BY 1, 2';
like($node->safe_psql('postgres', "$batch EXPLAIN (COSTS OFF) $moving"), qr/PicorouteBatchedJoin/,
     'the moving join is batched');
is($node->safe_psql('postgres', "$batch $moving"), $local_all, 'a bucket moved in the middle of the join: same rows');
is(emu_json('locate', 'users', '--key', "[$key]")->{replicaset}, $owner->{replicaset}, 'the bucket moved back');

# A large outer side keeps the hash join over one scan.
$node->safe_psql('postgres', 'CREATE TABLE many AS SELECT id FROM loc_users; ANALYZE many');
like($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*) FROM many m JOIN users u ON u.id = m.id'),
     qr/Hash Join/, '20,000 local keys: a hash join over one scan');

done_testing();
