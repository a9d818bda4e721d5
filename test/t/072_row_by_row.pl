# UPDATE and DELETE that cannot run as one remote statement are written row by row, by primary key:
# expressions evaluated here (functions, operators Picodata does not have with PostgreSQL's meaning),
# UPDATE ... FROM (VALUES ...), a prepared UPDATE in its generic plan, RETURNING. Each statement runs
# on the foreign table and on a local copy of its data, and the two tables must stay equal.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_table start_emulator start_routing_node);

$ENV{PICOEMU_LOG_STATEMENTS} = '1';
my $dir = start_emulator(tiers => ['default:2:1:3000']);
emu_table('acct', 'id int8, d numeric(12,2), t text, i int8, f float8, ts timestamptz', rows => 300);
# A composite primary key, the sharding key a part of it.
emu('create-table', 'pairs', '--columns', 'a int8, b int8, v int8', '--primary-key', 'a,b',
    '--sharding-key', 'a');
emu('load', 'pairs', '--rows', '120');
# The sharding key outside the primary key.
emu('create-table', 'byk', '--columns', 'id int8, k int8, v text', '--primary-key', 'id',
    '--sharding-key', 'k');
emu('load', 'byk', '--rows', '80');
emu_table('regions', 'code int8, name text', args => ['--global'], rows => 40);

my $node = start_routing_node(name => 'rowwise', admin => 1, refresh_interval => '600s');
$node->safe_psql('postgres', q{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname 'picodata', execution_options 'on');
CREATE USER MAPPING FOR PUBLIC SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE acct (id bigint, d numeric(12,2), t text, i bigint, f float8, ts timestamptz)
  SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE pairs (a bigint, b bigint, v bigint) SERVER pico OPTIONS (sharding_key 'a');
CREATE FOREIGN TABLE byk (id bigint, k bigint, v text) SERVER pico
  OPTIONS (sharding_key 'k', primary_key 'id');
SET TimeZone = 'UTC';
CREATE TABLE acct_local AS SELECT * FROM acct;
CREATE TABLE pairs_local AS SELECT * FROM pairs;
CREATE FOREIGN TABLE regions (code bigint, name text) SERVER pico OPTIONS (distribution 'global');
CREATE TABLE byk_local AS SELECT * FROM byk;
CREATE TABLE regions_local AS SELECT * FROM regions;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM acct_local'), '300', 'the local copy has 300 rows');

my %order = (acct => 'id', pairs => 'a, b', byk => 'id', regions => 'code');
# Runs `sql` on the foreign table and on the local copy; the results and both tables must agree.
sub same {
    my ($table, $sql, $name) = @_;
    (my $local = $sql) =~ s/\b$table\b/${table}_local/g;
    my ($out, $err) = ('', '');
    my $ret = $node->psql('postgres', "SET TimeZone = 'UTC'; $sql", stdout => \$out, stderr => \$err);
    is($ret, 0, "$name: runs") or diag($err);
    my $want = $node->safe_psql('postgres', "SET TimeZone = 'UTC'; $local");
    is($out, $want, "$name: the same answer as on the local copy");
    my $q = "SET TimeZone = 'UTC'; SELECT * FROM %s ORDER BY $order{$table}";
    my $remote = $node->safe_psql('postgres', sprintf($q, $table));
    my $copy = $node->safe_psql('postgres', sprintf($q, "${table}_local"));
    ok($remote eq $copy, "$name: the table equals the local copy") or diag(substr($remote, 0, 600));
}

my $plan = $node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) UPDATE acct SET d = d / 7 WHERE id < 40');
like($plan, qr/Row by Row: each row read below is written by its primary key/, 'EXPLAIN: row by row')
  or diag($plan);
like($plan, qr/Remote SQL: UPDATE "acct" SET "d" = \$1 WHERE <primary key and sharding key> = \$n/,
     'EXPLAIN: the statement of one row') or diag($plan);

my $log_offset = {};
sub sent {
    my @out;
    for my $log (glob("$dir/*/front.log")) {
        open(my $fh, '<', $log) or next;
        seek($fh, $log_offset->{$log} // 0, 0);
        push @out, map { /statement: (.*)$/ ? ($1) : () } <$fh>;
        $log_offset->{$log} = tell($fh);
        close($fh);
    }
    return @out;
}
sent();
same('acct', 'UPDATE acct SET d = d / 7 WHERE id < 40', 'SET d = d / 7 (numeric)');
my @all = sent();
my @upd = grep { /^UPDATE "acct"/ } @all;
my $analyze = $node->safe_psql('postgres',
    'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) UPDATE acct SET f = round(f) WHERE id < 10');
$node->safe_psql('postgres', 'UPDATE acct_local SET f = round(f) WHERE id < 10');
like($analyze, qr/Remote Rows Changed: 9\b/, 'EXPLAIN ANALYZE: the 9 rows changed remotely') or diag($analyze);
like($upd[0] // '', qr/^UPDATE "acct" SET "d" = \$1 WHERE "id" = \$2$/, 'written by the primary key');
is(scalar(grep { /FROM "_pico_index" WHERE "table_id" = \$1 AND "id" = 0/ } @all), 1,
   'the primary key was read from _pico_index, once');

# Pushed (one remote statement: || on text, % and / on integers, / on doubles, coalesce), and the
# same row by row (a condition evaluated here).
same('acct', q{UPDATE acct SET t = t || 'x' WHERE id % 5 = 1}, q{SET t = t || 'x' WHERE id % 5 = 1 (pushed)});
same('acct', q{UPDATE acct SET t = t || 'y' WHERE abs(id) % 5 = 2}, q{SET t = t || 'y', row by row});
same('acct', 'UPDATE acct SET i = i % 3 WHERE id BETWEEN 10 AND 60', 'SET i = i % 3 (pushed)');
same('acct', 'UPDATE acct SET i = (i - 500) % 7, f = f / 4 WHERE abs(id) BETWEEN 60 AND 90',
     'SET i = (i - 500) % 7 (negative dividends), f = f / 4, row by row');
same('acct', 'UPDATE acct SET i = (i - 500) / 7 WHERE id BETWEEN 90 AND 120', 'SET i = (i - 500) / 7 (pushed)');
same('acct', q{UPDATE acct SET t = NULL WHERE id % 11 = 0}, 'some NULLs (row by row: a local condition)');
same('acct', q{UPDATE acct SET t = coalesce(t, 'none') WHERE id < 50}, 'SET t = coalesce(t, ...) (pushed)');
same('acct', q{UPDATE acct SET t = coalesce(t, 'nil') WHERE abs(id) < 100}, 'SET t = coalesce(t, ...), row by row');
same('acct', 'UPDATE acct SET t = upper(t) WHERE id < 30', 'SET t = upper(t)');
same('acct', 'UPDATE acct SET d = round(d * 1.5, 1), f = round(f::numeric, 0)::float8 WHERE id > 250',
     'SET d = round(...), f = round(...)');
same('acct', q{UPDATE acct SET ts = ts + interval '1 day 2 hours' WHERE id <= 20}, 'SET ts = ts + interval');
same('acct', 'UPDATE acct SET f = f / 3, i = -i WHERE id % 4 = 0', 'SET f = f / 3, i = -i');
same('acct', q{UPDATE acct SET i = v.n, t = v.s FROM (VALUES (1, 100, 'a'), (2, 200, 'b'), (299, 300, 'c'))
               v(id, n, s) WHERE acct.id = v.id}, 'UPDATE ... FROM (VALUES ...)');
same('acct', 'UPDATE acct SET i = i + 1 WHERE id = 5 RETURNING id, i, t', 'UPDATE ... RETURNING (one row)');
same('acct', 'WITH u AS (UPDATE acct SET t = lower(t) WHERE id % 50 = 7 RETURNING id, t) SELECT * FROM u ORDER BY id',
     'UPDATE ... RETURNING, row by row');
same('acct', 'DELETE FROM acct WHERE id % 17 = 0', 'DELETE with a local condition');
same('acct', 'WITH d AS (DELETE FROM acct WHERE id % 23 = 1 RETURNING id, d) SELECT * FROM d ORDER BY id',
     'DELETE ... RETURNING, row by row');
same('acct', q{DELETE FROM acct USING (VALUES (3), (4), (250)) v(id) WHERE acct.id = v.id}, 'DELETE ... USING (VALUES ...)');

# A prepared UPDATE, past the sixth execution (the plan cache then tries the generic plan).
my $prep = q{PREPARE up(bigint, bigint) AS UPDATE acct SET i = i % $2 + 1 WHERE id = $1;}
  . join('', map { "EXECUTE up($_, 4);" } 100 .. 109);
(my $prep_local = $prep) =~ s/\bacct\b/acct_local/g;
$node->safe_psql('postgres', $prep);
$node->safe_psql('postgres', $prep_local);
is($node->safe_psql('postgres', 'SELECT * FROM acct ORDER BY id'), $node->safe_psql('postgres', 'SELECT * FROM acct_local ORDER BY id'),
   'a prepared UPDATE executed ten times: the table equals the local copy');
$node->safe_psql('postgres', "SET plan_cache_mode = force_generic_plan; $prep");
$node->safe_psql('postgres', "SET plan_cache_mode = force_generic_plan; $prep_local");
is($node->safe_psql('postgres', 'SELECT * FROM acct ORDER BY id'), $node->safe_psql('postgres', 'SELECT * FROM acct_local ORDER BY id'),
   'and in its generic plan');

# A composite primary key; the sharding key outside the primary key (option primary_key).
same('pairs', 'UPDATE pairs SET v = v % 7 + a WHERE b % 3 = 0', 'composite primary key (a, b)');
same('pairs', 'DELETE FROM pairs WHERE (a + b) % 10 = 0', 'DELETE by a composite primary key');
sent();
same('byk', q{UPDATE byk SET v = upper(v) WHERE id % 4 = 0}, 'sharding key k outside the primary key id');
my @byk = grep { /^UPDATE "byk"/ } sent();
like($byk[0] // '', qr/^UPDATE "byk" SET "v" = \$1 WHERE "id" = \$2 AND "k" = \$3$/,
     'identified by the primary key and the sharding key (which routes it)');

# A global table: each row by its primary key, through a coordinator.
same('regions', 'UPDATE regions SET name = upper(name) WHERE code % 3 = 0', 'a global table, row by row');
same('regions', 'DELETE FROM regions WHERE length(name) > 6', 'DELETE from a global table, row by row');

# Changing the sharding key is still refused; the row count is PostgreSQL's.
my ($ret, $out, $err) = $node->psql('postgres', 'UPDATE pairs SET a = a + 1 WHERE b % 2 = 0');
like($err, qr/cannot update sharding key column "a"/, 'a sharding-key column cannot be set');
is($node->safe_psql('postgres', q{WITH u AS (UPDATE acct SET t = t || '?' WHERE id % 9 = 2 RETURNING 1) SELECT count(*) FROM u}),
   $node->safe_psql('postgres', q{WITH u AS (UPDATE acct_local SET t = t || '?' WHERE id % 9 = 2 RETURNING 1) SELECT count(*) FROM u}),
   'the row count');

# A failure in the middle: the row whose statement fails is not written, the others stay
# committed, and the error says how many rows were committed where. (Declared numeric without a
# scale here, so the value too large for the remote numeric(12,2) is computed here and refused there.)
$node->safe_psql('postgres', q{CREATE FOREIGN TABLE acct_wide (id bigint, d numeric) SERVER pico
  OPTIONS (table_name 'acct', sharding_key 'id')});
my $before = $node->safe_psql('postgres', 'SELECT id, d FROM acct WHERE id < 20 ORDER BY id');
my ($frc, $fout, $ferr) = $node->psql('postgres',
    'UPDATE acct_wide SET d = CASE WHEN id = 7 THEN 1e15 ELSE d + 1 END WHERE abs(id) < 20');
isnt($frc, 0, 'a row refused by Picodata fails the statement');
like($ferr, qr/DETAIL:.*(\d+) rows of this statement were already committed on Picodata \(127\.0\.0\.1:\d+: \d+/s,
     'the DETAIL says how many rows were committed, by instance') or diag($ferr);
my %was = map { split /\|/ } split /\n/, $before;
my %now = map { split /\|/ } split /\n/, $node->safe_psql('postgres', 'SELECT id, d FROM acct WHERE id < 20 ORDER BY id');
is($now{7}, $was{7}, 'the refused row is unchanged');
my ($committed) = $ferr =~ /(\d+) rows of this statement were already committed/;
is(scalar(grep { $_ != 7 && $now{$_} != $was{$_} } keys %now), $committed // -1,
   'the rows the DETAIL counts are the rows changed');

done_testing();
