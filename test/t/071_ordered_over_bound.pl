# ORDER BY, OFFSET pagination and cursors over a table larger than the keyless row bound
# (picoroute.keyless_row_max, 4000 by default), with default settings. A pushed ORDER BY or LIMIT
# whose answer Picodata refuses as over the bound is computed here over the table's chunked scan
# (the plan under the Foreign Scan); ORDER BY without LIMIT over a table ANALYZE knows to be larger
# than the bound is not pushed at all; ORDER BY ... LIMIT 10 stays pushed. Every answer is compared
# with a local copy of the data, read through picoroute (a chunked scan) into a local table.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Picoroute::TestCluster qw(emu_table start_emulator start_routing_node);

my $rows = 10000;
start_emulator(tiers => ['default:2:1:3000']);
emu_table('big', 'id int8, v int8, name text', rows => $rows);

my $node = start_routing_node(name => 'ordered', admin => 1, refresh_interval => '600s');
$node->safe_psql('postgres', q{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname 'picodata', execution_options 'on');
CREATE USER MAPPING FOR PUBLIC SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE big (id bigint, v bigint, name text COLLATE "C") SERVER pico
  OPTIONS (sharding_key 'id');
});
# Some NULLs for NULLS FIRST (a keyed range: one remote UPDATE).
$node->safe_psql('postgres', 'UPDATE big SET v = NULL WHERE id >= 100 AND id < 400');
$node->safe_psql('postgres', 'CREATE TABLE big_local AS SELECT * FROM big');
is($node->safe_psql('postgres', 'SELECT count(*), count(v) FROM big_local'), "$rows|" . ($rows - 300),
   "the local copy has the $rows rows, 300 of them with a NULL v");

# The query's rows as text, one line each, in order.
sub rows_of {
    my ($sql) = @_;
    return $node->safe_psql('postgres', $sql);
}
sub same_as_local {
    my ($query, $name) = @_;
    (my $local = $query) =~ s/\bbig\b/big_local/g;
    my ($out, $err) = ('', '');
    my $ret = $node->psql('postgres', $query, stdout => \$out, stderr => \$err);
    is($ret, 0, "$name: runs") or diag($err);
    my $want = rows_of($local);
    ok($out eq $want, "$name: the same rows, in the same order, as the local copy")
      or diag('got ' . scalar(split /\n/, $out) . ' lines, want ' . scalar(split /\n/, $want));
}

my @queries = (
    [ 'SELECT id, v FROM big ORDER BY id', 'ORDER BY id' ],
    [ 'SELECT id, v, name FROM big ORDER BY v DESC NULLS FIRST, id', 'ORDER BY v DESC NULLS FIRST' ],
    [ 'SELECT id FROM big ORDER BY name', 'ORDER BY text under "C"' ],
    [ 'SELECT id, v FROM big ORDER BY id LIMIT 100 OFFSET 5000', 'OFFSET 5000' ],
    [ 'SELECT id, v FROM big ORDER BY v, id LIMIT 50 OFFSET 3990', 'OFFSET 3990 (n + m just over the bound)' ],
    [ 'SELECT id, v FROM big ORDER BY v NULLS FIRST, id LIMIT 3000 OFFSET 500', 'LIMIT 3000 OFFSET 500 (n + m under the bound)' ],
    [ 'SELECT id, v FROM big ORDER BY id DESC LIMIT 10', 'ORDER BY id DESC LIMIT 10' ],
    [ 'SELECT count(*) FROM (SELECT id FROM big LIMIT 10 OFFSET 9995) s', 'LIMIT OFFSET 9995 without ORDER BY' ],
);

for my $analyzed (0, 1) {
    my $when = $analyzed ? 'after ANALYZE' : 'before ANALYZE';
    same_as_local($_->[0], "$_->[1] $when") for @queries;
    # Pagination with OFFSET, page after page.
    my ($got, $want) = ('', '');
    for my $page (0 .. 4) {
        my $off = $page * 2400;
        $got .= rows_of("SELECT id, v FROM big ORDER BY v, id LIMIT 2400 OFFSET $off") . "\n";
        $want .= rows_of("SELECT id, v FROM big_local ORDER BY v, id LIMIT 2400 OFFSET $off") . "\n";
    }
    ok($got eq $want, "OFFSET pagination by pages of 2400 rows $when: every page as the local copy");
    $node->safe_psql('postgres', 'ANALYZE big') unless $analyzed;
}

# Plans after ANALYZE (10,000 rows known): ORDER BY alone is sorted here over the chunked scan,
# ORDER BY ... LIMIT 10 stays pushed, with the local plan under it for an answer over the bound.
my $plan = $node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM big ORDER BY id');
like($plan, qr/^Sort\n.*Foreign Scan on public\.big/s, 'ORDER BY over a table larger than the bound: a local Sort')
  or diag($plan);
unlike($plan, qr/ORDER BY/, 'no ORDER BY is sent') or diag($plan);
$plan = $node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM big ORDER BY id LIMIT 10');
like($plan, qr/Remote SQL: SELECT "id" FROM "big" ORDER BY "id" ASC NULLS LAST LIMIT 10 OPTION \(sql_motion_row_max = 4000/,
     'ORDER BY ... LIMIT 10 is pushed') or diag($plan);
like($plan, qr/Over the Row Bound: computed here by the plan below\n\s+->  Limit\n.*->  Sort\n.*->  Foreign Scan on public\.big/s,
     'with the local plan under it') or diag($plan);
# A table ANALYZE has not seen (1000 rows assumed): its ORDER BY is pushed, Picodata refuses the
# answer as over the bound, and the plan below computes it.
$node->safe_psql('postgres', q{CREATE FOREIGN TABLE big_new (id bigint, v bigint) SERVER pico
  OPTIONS (table_name 'big', sharding_key 'id')});
$plan = $node->safe_psql('postgres',
    'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM big_new ORDER BY id');
like($plan, qr/Remote SQL: SELECT "id" FROM "big" ORDER BY "id" ASC NULLS LAST\n/, 'pushed') or diag($plan);
like($plan, qr/Over the Row Bound: computed here by the plan below \(it was\)/,
     'EXPLAIN ANALYZE: an answer over the bound was computed here') or diag($plan);
like($plan, qr/Chunks: \d+/, 'over the chunked scan') or diag($plan);

# A named cursor in a transaction, FETCH by FETCH.
my $fetch = "BEGIN;\nDECLARE c CURSOR FOR SELECT id, v FROM big ORDER BY v DESC NULLS FIRST, id;\n"
  . join('', map { "FETCH 1500 FROM c;\n" } 1 .. 7) . "COMMIT;\n";
my ($out, $err) = ('', '');
$node->psql('postgres', $fetch, stdout => \$out, stderr => \$err, on_error_stop => 1);
is($err, '', 'DECLARE ... ORDER BY; FETCH 1500 seven times: no error');
is($out, rows_of('SELECT id, v FROM big_local ORDER BY v DESC NULLS FIRST, id'),
   'the cursor returns every row in the order of the local copy');
# A cursor left open after a partial read, and one with OFFSET.
$out = $node->safe_psql('postgres',
    "BEGIN; DECLARE d CURSOR FOR SELECT id FROM big ORDER BY id OFFSET 4500; FETCH 3 FROM d; COMMIT;");
is($out, "4501\n4502\n4503", 'a cursor with OFFSET 4500: its first rows');

# A psycopg 3 server-side cursor (DECLARE ... FETCH underneath).
my $script = <<'PY';
import sys
import psycopg
with psycopg.connect(sys.argv[1]) as conn:
    with conn.cursor(name="pages") as cur:
        cur.itersize = 700
        cur.execute("SELECT id, v FROM big ORDER BY v NULLS FIRST, id")
        remote = [r for r in cur]
    with conn.cursor() as cur:
        cur.execute("SELECT id, v FROM big_local ORDER BY v NULLS FIRST, id")
        local = cur.fetchall()
print(len(remote), "same" if remote == local else "different")
PY
my ($pyout, $pyerr) = ('', '');
IPC::Run::run([ '/usr/bin/python3', '-c', $script, $node->connstr('postgres') ], '>', \$pyout, '2>', \$pyerr);
is($pyout, "$rows same\n", 'psycopg 3 server-side cursor: every row, in the order of the local copy')
  or diag($pyerr);

done_testing();
