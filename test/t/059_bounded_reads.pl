# Bounded keyless reads: a read without a sharding key never asks a coordinator to gather more rows
# than picoroute.keyless_row_max (4000 by default, under Picodata's own 5000). Every statement the
# emulator's fronts receive is logged (PICOEMU_LOG_STATEMENTS), and its OPTION clause is checked:
# a 20,000-row read is counted per bucket and read in bucket chunks of at most 4000 rows, a small
# table in one statement, a filtered read with its condition in every statement; the setting 0
# sends one unbounded statement; one bucket over the bound is refused (54000) with a hint that
# works; a pushed aggregate over the bound says which settings avoid it.
# Runs on every emulated version (the chunk statements filter by bucket_id, which versions treat
# differently).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_audit emu_audit_clear emu_table start_emulator start_routing_node
  picodata_release_with);

$ENV{PICOEMU_LOG_STATEMENTS} = '1';
my $dir = start_emulator(tiers => [ 'default:2:2:3000', 'small:2:1:600' ]);
emu_table('users', 'id int8, name text, v int8', rows => 20000);
emu_table('small', 'id int8, name text', rows => 100);
# 300 buckets per master in tier small: a masters scatter lists them within Picodata's 512 chains.
emu_table('musers', 'id int8, name text', args => [ '--tier', 'small' ], rows => 9000);
emu_table('countries', 'code int8, name text', args => ['--global'], rows => 4500);
emu('create-table', 'hot', '--columns', 'id int8, n int8', '--primary-key', 'id,n',
    '--sharding-key', 'id');

my $status = emu_json('status', '--json');
my %port_of = map { $_->{name} => $_->{port} } @{ $status->{instances} };
my @logs = map { "$dir/$_->{name}/front.log" } @{ $status->{instances} };
my %offset = map { $_ => (-s $_ // 0) } @logs;
# The statements the fronts received since the last call.
sub sent {
    my @out;
    for my $log (@logs) {
        open(my $fh, '<', $log) or next;
        seek($fh, $offset{$log}, 0);
        push @out, map { /statement: (.*)$/ ? ($1) : () } <$fh>;
        $offset{$log} = tell($fh);
        close($fh);
    }
    return @out;
}
# The sql_motion_row_max of each statement (undef where it has none).
sub row_max { return map { /sql_motion_row_max = (\d+)/ ? $1 : undef } @_; }

my $node = start_routing_node(name => 'bounded', admin => 1, refresh_interval => '600s');
# scatter 'masters' needs a release that prunes by bucket_id: pico_m names one, whatever is emulated.
my $prune_release = picodata_release_with(prune_by_bucket_id => 1);
$node->safe_psql('postgres', qq{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname 'picodata', execution_options 'on');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE small (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE hot (id bigint, n bigint) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE countries (code bigint, name text) SERVER pico OPTIONS (distribution 'global');
CREATE SERVER pico_m FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'small', dbname 'picodata',
  execution_options 'on', scatter 'masters', picodata_version '$prune_release');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_m OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE musers (id bigint, name text) SERVER pico_m OPTIONS (sharding_key 'id');
});
my $full = 'SELECT count(*), sum(id) FROM (SELECT * FROM users OFFSET 0) s';

# ---- 20,000 rows on a default server -------------------------------------------------------------
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM users'),
     qr/Remote SQL: SELECT "id", "name", "v" FROM "users" OPTION \(sql_motion_row_max = 4000, sql_vdbe_opcode_max = 0\)/,
     'EXPLAIN VERBOSE: a keyless read carries the bound 4000');
sent();
is($node->safe_psql('postgres', $full), '20000|200010000', '20,000 rows read whole, each once');
my @read = grep { /FROM "users"/ } sent();
my @max = row_max(@read);
is(scalar(grep { !defined $_ } @max), 0, 'every statement of the read has an OPTION clause')
  or diag(join("\n", @read));
is(scalar(grep { defined $_ && ($_ == 0 || $_ > 4000) } @max), 0,
   'no statement asks a coordinator for more than 4000 rows (none for 0)') or diag(join("\n", @read));
my @count = grep { /GROUP BY "bucket_id"/ } @read;
is(scalar(@count), 1, 'one count per bucket') or diag(join("\n", @read));
like($count[0] // '', qr/^SELECT "bucket_id", count\(\*\) FROM "users" GROUP BY "bucket_id" OPTION \(sql_motion_row_max = 3000, sql_vdbe_opcode_max = 0\)$/,
     'the count is bounded by the bucket count');
my @chunks = grep { /"bucket_id" BETWEEN \d+ AND \d+ OPTION \(sql_motion_row_max = 4000/ } @read;
cmp_ok(scalar(@chunks), '>=', 5, scalar(@chunks) . ' chunk statements of at most 4000 rows');
is(scalar(@read), 2 + scalar(@chunks), 'and the first statement, refused by the bound')
  or diag(join("\n", @read));
my $analyze = $node->safe_psql('postgres', 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM users');
like($analyze, qr/rows=20000 loops=1\).*Chunks: \d+/s, 'EXPLAIN ANALYZE: 20,000 rows, and the chunk statements sent')
  or diag($analyze);

# ---- a scan that keeps whole answers for its rescans (the inner side of a nested loop) --------------
my $rewind = 'SELECT count(*), sum(u.id) FROM (VALUES (1), (2)) v(x) LEFT JOIN users u ON u.v >= v.x - 2000';
like($node->safe_psql('postgres', "SET enable_material = off; EXPLAIN (COSTS OFF) $rewind"),
     qr/Nested Loop Left Join.*\n\s+->  Foreign Scan on users u/s, 'users is the inner side of a nested loop, without Material');
sent();
is($node->safe_psql('postgres', "SET enable_material = off; $rewind"), '40000|400020000',
   'a rescanned scan reads its 20,000 rows in chunks once and replays them');
@read = grep { /FROM "users"/ } sent();
is(scalar(grep { !defined $_ || $_ == 0 || $_ > 4000 } row_max(grep { !/GROUP BY/ } @read)), 0,
   'each of its statements within 4000 rows');
cmp_ok(scalar(grep { /BETWEEN/ } @read), '>=', 5, 'in chunks') or diag(join("\n", @read));

# ---- the setting 0: the whole answer at once ---------------------------------------------------
sent();
is($node->safe_psql('postgres', "SET picoroute.keyless_row_max = 0; $full"), '20000|200010000',
   'keyless_row_max 0: 20,000 rows');
@read = grep { /FROM "users"/ } sent();
is(scalar(@read), 1, 'keyless_row_max 0: one statement') or diag(join("\n", @read));
like($read[0] // '', qr/OPTION \(sql_motion_row_max = 0, sql_vdbe_opcode_max = 0\)$/, 'with sql_motion_row_max = 0');

# ---- a small table: one statement ----------------------------------------------------------------
sent();
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM (SELECT * FROM small OFFSET 0) s'), '100|5050',
   'a small table read whole');
@read = grep { /FROM "small"/ } sent();
is(scalar(@read), 1, 'a small table: one statement') or diag(join("\n", @read));
is_deeply([ row_max(@read) ], [4000], 'with the bound 4000');

# ---- a filtered read: the condition in the count and in every chunk -----------------------------
my @match = grep { "name_$_" =~ /^name_1/ } 1 .. 20000;
my $msum = 0;
$msum += $_ for @match;
sent();
is($node->safe_psql('postgres', q{SELECT count(*), sum(id) FROM (SELECT * FROM users WHERE name LIKE 'name\_1%' OFFSET 0) s}),
   scalar(@match) . "|$msum", scalar(@match) . ' rows match the filter, each read once');
@read = grep { /FROM "users"/ } sent();
cmp_ok(scalar(@read), '>=', 5, 'the filtered read went in chunks');
is(scalar(grep { !/LIKE/ } @read), 0, 'every statement carries the condition') or diag(join("\n", @read));
is(scalar(grep { /GROUP BY "bucket_id"/ && /WHERE .*LIKE/ } @read), 1, 'the count too');
is(scalar(grep { !defined $_ || $_ == 0 || $_ > 4000 } row_max(grep { !/GROUP BY/ } @read)), 0,
   'each within 4000 rows');

# ---- a masters scatter: each master's part over the bound is read in chunks of its buckets --------
sent();
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM (SELECT * FROM musers OFFSET 0) s'),
   '9000|40504500', "scatter 'masters': 9000 rows, each once");
@read = grep { /FROM "musers"/ } sent();
is(scalar(grep { !defined $_ || $_ == 0 || $_ > 4000 } row_max(grep { !/GROUP BY/ } @read)), 0,
   "scatter 'masters': every statement within 4000 rows") or diag(join("\n", map { substr($_, 0, 200) } @read));
my @mcount = grep { /GROUP BY "bucket_id"/ } @read;
is(scalar(@mcount), 2, "scatter 'masters': one count per master");
is(scalar(grep { /WHERE bucket_id IN \(.*\) GROUP BY/ } @mcount), 2, 'each within its own buckets');
cmp_ok(scalar(grep { /bucket_id IN \(.*\) AND "bucket_id" BETWEEN/ } @read), '>=', 4,
       'the chunks keep the master\'s bucket list');

# ---- one bucket over the bound -------------------------------------------------------------------
$node->safe_psql('postgres',
    'INSERT INTO hot SELECT 1, n FROM generate_series(1, 10) n; INSERT INTO hot SELECT k, 0 FROM generate_series(2, 5) k');
my $bucket = emu_json('locate', 'hot', '--key', '[1]')->{bucket_id};
my ($ret, $out, $err) = $node->psql('postgres',
    "\\set VERBOSITY verbose\nSET picoroute.keyless_row_max = 5;\nSELECT count(*) FROM (SELECT * FROM hot OFFSET 0) s");
like($err, qr/ERROR:  54000: picoroute: bucket $bucket of foreign table "hot" holds 10 rows that the scan reads, more than picoroute.keyless_row_max \(5\)/,
     "one bucket of 10 rows over the bound 5: 54000 naming bucket $bucket");
my ($hint) = $err =~ /HINT:  (.*)/;
like($hint // '', qr/SET picoroute.keyless_row_max = 10/, 'the hint gives the setting') or diag($err);
my ($set) = ($hint // '') =~ /\((SET picoroute.keyless_row_max = \d+)\)/;
sent();
is($node->safe_psql('postgres', "$set; SELECT count(*), sum(n) FROM (SELECT * FROM hot OFFSET 0) s"), '14|55',
   'following the hint reads the table');
@read = grep { /FROM "hot"/ } sent();
my @hot = grep { /BETWEEN/ } @read;
cmp_ok(scalar(@hot), '>=', 2, 'read in chunks') or diag(join("\n", @read));
is(scalar(grep { /BETWEEN $bucket AND \d+ OPTION \(sql_motion_row_max = 10,/ } @hot), 1,
   "one chunk starts at bucket $bucket, within the new bound") or diag(join("\n", @read));

# ---- a pushed aggregate over the bound: the error names what avoids it ---------------------------
($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM (SELECT name, count(*) FROM users GROUP BY name) g');
like($err, qr/Exceeded maximum number of rows \(4000\)/, 'a pushed GROUP BY of 20,000 groups exceeds the bound');
like($err, qr/HINT:  .*picoroute.keyless_row_max.*pushdown_aggregates 'off'/, 'the hint names the setting and pushdown_aggregates');
$node->safe_psql('postgres', q{ALTER FOREIGN TABLE users OPTIONS (ADD pushdown_aggregates 'off')});
is($node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT name, count(*) FROM users GROUP BY name) g'), '20000',
   "with pushdown_aggregates 'off': read in chunks, grouped here");

# ---- a global table over the bound: no bucket to chunk by; the hint names its table option -------
($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM (SELECT * FROM countries OFFSET 0) s');
like($err, qr/Exceeded maximum number of rows \(4000\).*HINT:  .*sql_motion_row_max '0'/s,
     'a global table of 4500 rows: refused, with a hint naming its table option');
$node->safe_psql('postgres', q{ALTER FOREIGN TABLE countries OPTIONS (ADD sql_motion_row_max '0')});
sent();
is($node->safe_psql('postgres', 'SELECT count(*) FROM (SELECT * FROM countries OFFSET 0) s'), '4500',
   'following the hint reads it');
is_deeply([ row_max(grep { /FROM "countries"/ } sent()) ], [0], 'in one statement, unbounded as asked');

# The fronts refused only the statements over the bound, each before a chunked read or an error.
my @refused = @{ emu_audit() };
cmp_ok(scalar(@refused), '>=', 5, scalar(@refused) . ' statements refused by the row limit');
is_deeply([ grep { $_->{sqlstate} ne 'XX000' || $_->{message} !~ /^sbroad: (?:Query \d+ from EXPLAIN \(RAW\): |unexpected number of values: )?Exceeded maximum number of rows/ } @refused ],
          [], 'only for the row limit');
emu_audit_clear();

$node->stop;
done_testing();
