# Every column type picoroute takes in a foreign table declaration (key_datum.cpp's table) works in
# INSERT ... VALUES, in UPDATE ... SET and in the WHERE clause of UPDATE, DELETE and SELECT, in
# custom and generic plans alike: a length coercion (varchar(n), character(n), numeric(p,s)) of a
# parameter is applied here and its value sent, character(n) values go without their trailing
# blanks (as PostgreSQL compares them), reals compare with reals. And `k = a OR k = b` is routed
# like `k IN (a, b)`.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_json emu_audit start_emulator start_routing_node
  create_servers emu_private_psql);

start_emulator(replicasets => 2, replication_factor => 1);
# Picodata has no character(n), real or name: those columns are strings and doubles there.
emu('create-table', 'ty', '--columns',
    'id int8, c text, vc varchar(5), sm int2, it int4, b bool, r float8, d float8, '
      . 'n numeric(10,2), u uuid, ts timestamptz, nm text, mark text');
my $node = start_routing_node(name => 'types');
create_servers($node, 'pico');
$node->safe_psql('postgres', q{
CREATE FOREIGN TABLE ty (id bigint, c char(4), vc varchar(5), sm smallint, it integer, b boolean,
  r real, d double precision, n numeric(10,2), u uuid, ts timestamptz, nm name, mark text)
  SERVER pico OPTIONS (sharding_key 'id');
});

# column => [type, first value, second value, the second value as text]
my @columns = (
    [ 'c',  'char(4)',          q{'ab'},    q{'cd  '},  'cd' ],
    [ 'vc', 'varchar(5)',       q{'abc'},   q{'vwxyz'}, 'vwxyz' ],
    [ 'sm', 'smallint',         q{'7'},     q{'-8'},    '-8' ],
    [ 'it', 'integer',          q{'70000'}, q{'-70001'}, '-70001' ],
    [ 'b',  'boolean',          q{'true'},  q{'false'}, 'false' ],
    [ 'r',  'real',             q{'0.1'},   q{'0.3'},   '0.3' ],
    [ 'd',  'double precision', q{'1.5'},   q{'-2.25'}, '-2.25' ],
    [ 'n',  'numeric(10,2)',    q{'2.5'},   q{'3.1'},   '3.10' ],
    [ 'u', 'uuid', q{'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'},
      q{'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'}, 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12' ],
    [ 'ts', 'timestamptz', q{'2025-01-02 03:04:05+00'}, q{'2026-02-03 04:05:06.5+00'},
      '2026-02-03 04:05:06.5+00' ],
    [ 'nm', 'name', q{'nm1'}, q{'nm2'}, 'nm2' ],
);

my $id = 100;
for my $mode ('custom', 'generic') {
    for my $col (@columns) {
        my ($name, $type, $v1, $v2, $v2text) = @$col;
        my ($k, $l) = ($id, $id + 1);
        $id += 10;
        # Prepared statements without parameter types, as drivers send them: the types come
        # from the columns (a length coercion of $1 in SET).
        my ($out, $err) = ('', '');
        $node->psql('postgres', qq{
SET TimeZone = 'UTC';
SET plan_cache_mode = force_${mode}_plan;
PREPARE ins AS INSERT INTO ty (id, $name) VALUES (\$1, \$2);
EXECUTE ins($k, $v1);
INSERT INTO ty (id, $name) VALUES ($l, ${v1}::$type);
PREPARE upd AS UPDATE ty SET $name = \$1 WHERE id = \$2;
EXECUTE upd($v2, $k);
UPDATE ty SET $name = ${v2}::$type WHERE id = $l;
PREPARE mark AS UPDATE ty SET mark = 'p' WHERE id = \$1 AND $name = \$2;
EXECUTE mark($k, $v2);
UPDATE ty SET mark = 'l' WHERE $name = ${v2}::$type AND id = $l;
PREPARE cnt AS SELECT count(*) FROM ty WHERE $name = \$1 AND id IN ($k, $l);
EXECUTE cnt($v2);
SELECT id, ${name}::text, mark FROM ty WHERE id IN ($k, $l) ORDER BY id;
PREPARE del AS DELETE FROM ty WHERE id = \$1 AND $name = \$2;
EXECUTE del($k, $v2);
DELETE FROM ty WHERE $name = ${v2}::$type AND id = $l;
SELECT count(*) FROM ty WHERE id IN ($k, $l);
}, stdout => \$out, stderr => \$err, on_error_stop => 1);
        is($out, "2\n$k|$v2text|p\n$l|$v2text|l\n0", "$type in VALUES, SET and WHERE, $mode plans")
          or diag($err);
    }
}

# character(n): stored without trailing blanks, compared as PostgreSQL compares them.
$node->safe_psql('postgres', q{INSERT INTO ty (id, c, vc) VALUES (1, 'xy', 'xy')});
my %stored;
for my $inst (grep { $_->{role} eq 'master' } @{ emu_json('status', '--json')->{instances} }) {
    $stored{ emu_private_psql($inst->{name}, q{SELECT '[' || c || ']' FROM ty WHERE id = 1}) } = 1;
}
is(join(',', sort keys %stored), '[xy]', 'a character(4) value is stored without its padding');
is($node->safe_psql('postgres',
        q{SELECT c = 'xy  ', c = 'xy', octet_length(c), c::text FROM ty WHERE c = 'xy   '}),
    "t|t|4|xy", 'a character(4) value reads back padded and compares without its blanks');
like($node->safe_psql('postgres',
        q{EXPLAIN (VERBOSE, COSTS OFF) UPDATE ty SET mark = 'm' WHERE c = 'xy  '}),
    qr/Remote SQL: UPDATE "ty" SET "mark" = 'm' WHERE \("c" = 'xy'\)/,
    'a character(n) constant is sent without its trailing blanks');
is($node->safe_psql('postgres',
        q{SELECT octet_length(c), count(*) FROM ty WHERE id = 1 GROUP BY c}),
    '4|1', 'a character(n) group key read back from a pushed GROUP BY is padded');
# LIKE matches the padded value in PostgreSQL: evaluated here.
is($node->safe_psql('postgres', q{SELECT count(*) FROM ty WHERE id = 1 AND c LIKE 'xy'}),
    '0', 'LIKE on character(n) keeps the padding (evaluated locally)');

# varchar(n): the generic plan's length coercion raises PostgreSQL's error, before sending.
my ($ret, $out, $err) = $node->psql('postgres', q{
SET plan_cache_mode = force_generic_plan;
PREPARE u AS UPDATE ty SET vc = $1 WHERE id = $2;
EXECUTE u('toolong', 1);
});
like($err, qr/value too long for type character varying\(5\)/,
    'a value too long for varchar(n) fails as in PostgreSQL (generic plan)');
# The plan cache's own switch to a generic plan after five executions.
($ret, $out, $err) = $node->psql('postgres', q{
PREPARE u AS UPDATE ty SET vc = $1 WHERE id = $2;
EXECUTE u('a', 1); EXECUTE u('b', 1); EXECUTE u('c', 1); EXECUTE u('d', 1);
EXECUTE u('e', 1); EXECUTE u('f', 1); EXECUTE u('g', 1);
SELECT vc FROM ty WHERE id = 1;
});
is($out, 'g', 'a prepared varchar(n) UPDATE runs past the switch to a generic plan') or diag($err);

# real: compared with reals remotely, with doubles locally (0.1::real is not 0.1).
is($node->safe_psql('postgres', q{
INSERT INTO ty (id, r) VALUES (2, 0.1);
SELECT count(*) FILTER (WHERE r = 0.1::real), count(*) FILTER (WHERE r > 0.1::float8)
FROM ty WHERE id = 2;}), '1|1', 'real compares as in PostgreSQL');

# k = a OR k = b routes like k IN (a, b).
$node->safe_psql('postgres', q{INSERT INTO ty (id, mark) VALUES (3, 'or'), (4, 'or')});
my $or = $node->safe_psql('postgres',
    q{EXPLAIN (VERBOSE, COSTS OFF) SELECT mark FROM ty WHERE id = 3 OR id = 4});
my $in = $node->safe_psql('postgres',
    q{EXPLAIN (VERBOSE, COSTS OFF) SELECT mark FROM ty WHERE id IN (3, 4)});
my ($or_route) = $or =~ /(Routing: .*)/;
my ($in_route) = $in =~ /(Routing: .*)/;
like($or_route // '', qr/bucket/, 'an OR of key equalities is routed by its keys');
is($or_route, $in_route, 'k = a OR k = b routes as k IN (a, b)');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ty WHERE id = 3 OR id = 4}), '2',
    'the OR read finds both rows');

# A wrong dbname (FATAL 3D000 at connection) fails at once with its SQLSTATE: no retry for
# picoroute.failover_wait (10 s) can cure it.
$node->safe_psql('postgres', q{
CREATE SERVER pico_baddb FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'nosuch');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_baddb OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE ty_baddb (id bigint, mark text) SERVER pico_baddb
  OPTIONS (table_name 'ty', sharding_key 'id');
});
my $t0 = time();
($ret, $out, $err) = $node->psql('postgres',
    q{\set VERBOSITY verbose
SELECT mark FROM ty_baddb WHERE id = 1});
my $elapsed = time() - $t0;
like($err, qr/ERROR:  3D000: picoroute: Picodata instance \S+ refused the connection: database "nosuch" does not exist/,
    'a wrong dbname fails with 3D000, naming the instance') or diag($err);
cmp_ok($elapsed, '<', 5, "at once ($elapsed s), not after picoroute.failover_wait");

is_deeply(emu_audit(), [], 'the Picodata fronts refused no statement');
done_testing();
