# Joins of a local table with a picoroute foreign table on its sharding key, against the emulator:
# the planner picks a nested loop whose foreign scan is a routed lookup per outer row (a
# parameterized path), and the rows are those PostgreSQL computes over a local copy, for 100 keys
# with keys that match nothing, NULL keys, duplicate keys, keys of other types (int4, a cast of
# text, of numeric), inner, left, semi and anti joins; a bucket moved while the join runs sends
# the later lookups to the new owner. A large outer side keeps the one-scan plan. (Batched joins,
# off here, are 069_batched_join.pl.)
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

start_emulator(replicasets => 2, replication_factor => 1);
emu_table('users', 'id int8, name text, v int8', rows => 20000);

# The admin user: the test reads the storages' own tables around picoroute.
my $node = start_routing_node(name => 'join', admin => 1, refresh_interval => '300ms');
create_servers($node, 'pico');
# This file tests the lookup per outer row; 069_batched_join.pl tests the batched join that the
# planner prefers for inner joins of a few hundred keys.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET picoroute.join_batch_size = 0');
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', 'pico');
$node->safe_psql('postgres', 'CREATE TABLE loc (id bigint, name text, v bigint)');
# The same rows, read from the storages around picoroute, in a local table.
for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
    my @rows = split /\n/,
      emu_private_psql($rs->{master}, 'SELECT id, name, v FROM _picoemu_local.users');
    while (my @chunk = splice(@rows, 0, 2000)) {
        $node->safe_psql('postgres', 'INSERT INTO loc VALUES '
              . join(', ', map { '(' . join(', ', map { "'$_'" } split /\|/, $_, -1) . ')' } @chunk));
    }
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM loc'), '20000', 'local copy has every row');

# 100 outer rows, in this order: 80 keys that exist, 8 that do not (past the end, 0, negative),
# 6 NULL, 6 repeating earlier keys. The last key is the one whose bucket moves below.
my $last_key = 19999;
$node->safe_psql('postgres', qq{
CREATE TABLE keys (ord int, k bigint, i integer, t text, n numeric);
WITH base AS (
  SELECT g AS ord, g * 197 % 20000 + 1 AS k FROM generate_series(1, 80) g
  UNION ALL
  SELECT 80 + g, (ARRAY[20001, 25000, 0, -1, -20000, 99999, 20002, 123456])[g]
    FROM generate_series(1, 8) g
  UNION ALL
  SELECT 88 + g, NULL FROM generate_series(1, 6) g
  UNION ALL
  SELECT 94 + g, g * 7 * 197 % 20000 + 1 FROM generate_series(1, 5) g
  UNION ALL
  SELECT 100, $last_key)
INSERT INTO keys SELECT ord, k, k, k::text, k + 0.4 FROM base ORDER BY ord;
ANALYZE keys;
ANALYZE users;
});
is($node->safe_psql('postgres', 'SELECT count(*), count(k), count(DISTINCT k) FROM keys'),
   '100|94|89', '100 keys: 6 NULL, 5 repeated');

# Each join, over the foreign table (a nested loop over routed lookups, checked by EXPLAIN) and over
# the local copy.
my @joins = (
    [ 'inner join', 'SELECT l.ord, u.id, u.name, u.v FROM keys l JOIN %s u ON u.id = l.k ORDER BY 1, 2' ],
    [ 'left join', 'SELECT l.ord, u.id, u.name FROM keys l LEFT JOIN %s u ON u.id = l.k ORDER BY 1, 2' ],
    [ 'semi join', 'SELECT l.ord FROM keys l WHERE EXISTS (SELECT 1 FROM %s u WHERE u.id = l.k) ORDER BY 1' ],
    [ 'anti join', 'SELECT l.ord FROM keys l WHERE NOT EXISTS (SELECT 1 FROM %s u WHERE u.id = l.k) ORDER BY 1' ],
    [ 'key from an int4 column', 'SELECT l.ord, u.name FROM keys l JOIN %s u ON u.id = l.i ORDER BY 1' ],
    [ 'key from a cast of text', 'SELECT l.ord, u.name FROM keys l JOIN %s u ON u.id = l.t::bigint ORDER BY 1' ],
    [ 'key from a cast of numeric', 'SELECT l.ord, u.name FROM keys l JOIN %s u ON u.id = l.n::bigint ORDER BY 1' ],
    [ 'more conditions on the foreign side', 'SELECT l.ord, u.v FROM keys l JOIN %s u ON u.id = l.k '
      . 'AND u.v <> 300 WHERE u.name LIKE \'name%%\' ORDER BY 1' ],
);
for my $j (@joins) {
    my ($name, $sql) = @$j;
    my $remote = sprintf($sql, 'users');
    my $plan = $node->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $remote");
    like($plan, qr/Nested Loop.*Foreign Scan on public\.users u.*Remote SQL: SELECT [^\n]* WHERE [^\n]*\("id" = \$1\)/s,
         "$name: a lookup per outer row") or diag($plan);
    my $got = $node->safe_psql('postgres', $remote);
    is($got, $node->safe_psql('postgres', sprintf($sql, 'loc')), "$name: same rows as computed locally");
}
isnt($node->safe_psql('postgres', sprintf($joins[0][1], 'users')), '', 'the inner join found rows');

# One lookup per outer row, each a single statement that returns at most the matching row.
my $analyzed = $node->safe_psql('postgres',
    'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT u.name FROM keys l JOIN users u ON u.id = l.k');
# The planner may cache the answers of repeated keys (Memoize): then one lookup per distinct key.
my $lookups = $analyzed =~ /Foreign Scan on users u \(actual rows=1 loops=(\d+)\)/ ? $1 : 0;
ok($analyzed =~ /Memoize.*Misses: 90\b/s ? $lookups == 90 : $lookups == 100,
   "one lookup per outer row, or per distinct key when cached ($lookups)") or diag($analyzed);
my $owner = emu_json('locate', 'users', '--key', "[$last_key]");
like($analyzed, qr/Routing: bucket $owner->{bucket_id} -> [^\n]*127\.0\.0\.1:$owner->{port}/,
     'the last lookup went to the owner of its bucket') or diag($analyzed);

# A large outer side: one scan of the table is cheaper than 20,000 lookups.
$node->safe_psql('postgres', 'CREATE TABLE many AS SELECT id FROM loc; ANALYZE many');
my $big = $node->safe_psql('postgres',
    'EXPLAIN (COSTS OFF) SELECT count(*) FROM many m JOIN users u ON u.id = m.id');
like($big, qr/Hash Join/, '20,000 local keys: a hash join over one scan') or diag($big);
is($node->safe_psql('postgres', 'SELECT count(*), sum(u.v) FROM many m JOIN users u ON u.id = m.id'),
   $node->safe_psql('postgres', 'SELECT count(*), sum(v) FROM loc'), '20,000 local keys: same rows');

# The map changes while the join runs: when the outer side reaches row 50, the bucket of the last key
# moves to the other replicaset and the map is refreshed. The later lookups follow the new map.
my $other = (grep { $_->{name} ne $owner->{replicaset} } @{ emu_json('status', '--json')->{replicasets} })[0];
my $other_port = (grep { $_->{name} eq $other->{master} } @{ emu_json('status', '--json')->{instances} })[0]->{port};
# move_at(ord, at): at row `at` of the outer side, moves the bucket of the last key to `rs` and
# waits for the refreshed map (define_move_at in TestCluster).
sub move_bucket_at {
    my ($rs) = @_;
    define_move_at($node, 'move', 'default', $owner->{bucket_id}, $owner->{bucket_id}, $rs);
}
move_bucket_at($other->{name});
my $moving = 'SELECT l.ord, u.id, u.name FROM (SELECT move_at(ord, 50) AS ord, k FROM keys OFFSET 0) l '
  . 'JOIN users u ON u.id = l.k';
my $moved_plan = $node->safe_psql('postgres', "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $moving");
like($moved_plan, qr/Nested Loop.*loops=100\).*Routing: bucket $owner->{bucket_id} -> [^\n]*127\.0\.0\.1:$other_port/s,
     'after the move, the lookup of the moved bucket went to its new owner') or diag($moved_plan);
is(emu_json('locate', 'users', '--key', "[$last_key]")->{replicaset}, $other->{name},
   'the bucket did move');
# And back, while the rows are read: the same rows as before.
move_bucket_at($owner->{replicaset});
is($node->safe_psql('postgres', "$moving ORDER BY 1, 2"),
   $node->safe_psql('postgres', 'SELECT l.ord, u.id, u.name FROM keys l JOIN loc u ON u.id = l.k ORDER BY 1, 2'),
   'rows read across a bucket move: same rows as computed locally');
is(emu_json('locate', 'users', '--key', "[$last_key]")->{replicaset}, $owner->{replicaset},
   'the bucket moved back');

done_testing();
