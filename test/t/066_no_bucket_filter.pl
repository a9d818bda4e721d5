# A bucket picoroute computes decides where a statement goes, never which rows it sees. Every
# statement the emulator's fronts receive is logged (PICOEMU_LOG_STATEMENTS): no keyed statement
# (point read, key list, prepared parameter, UPDATE, DELETE) carries a bucket_id term; a 100-key IN
# read is sent once and costs only the owners (per-instance counters); a masters scatter whose
# bucket lists stay within Picodata's 512 chains asks each master once, with its own buckets; and a
# stale map that sends a key to the wrong replicaset still gives the right rows (a hop, not an answer).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use Picoroute::TestCluster
  qw(emu emu_json emu_table start_emulator start_routing_node exec_options picodata_has emu_counters
  counters_moved picodata_release_with emu_locate);

$ENV{PICOEMU_LOG_STATEMENTS} = '1';
my $dir = start_emulator(tiers => [ 'default:2:1:3000', 'small:2:1:600' ]);
emu_table('users', 'id int8, name text, v int8', rows => 300);
emu('create-table', 'notes', '--columns', 'id int8, body text', '--tier', 'small');
emu('load', 'notes', '--rows', '200');

my $status = emu_json('status', '--json');
my %port_of = map { $_->{name} => $_->{port} } @{ $status->{instances} };
my @logs = map { "$dir/$_->{name}/front.log" } @{ $status->{instances} };
my %offset = map { $_ => (-s $_ // 0) } @logs;
# The statements the fronts received since the last call, as "port: text".
sub sent {
    my @out;
    for my $log (@logs) {
        open(my $fh, '<', $log) or next;
        seek($fh, $offset{$log}, 0);
        my ($name) = $log =~ m{/([^/]+)/front\.log$};
        push @out, map { /statement: (.*)$/ ? ("$port_of{$name}: $1") : () } <$fh>;
        $offset{$log} = tell($fh);
        close($fh);
    }
    return @out;
}

my $node = start_routing_node(name => 'nobucket', admin => 1, refresh_interval => '600s');
my $xo = exec_options();
# scatter 'masters' needs a release that prunes by bucket_id: pico_s names one, whatever is emulated.
my $prune_release = picodata_release_with(prune_by_bucket_id => 1);
$node->safe_psql('postgres', qq{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE SERVER pico_s FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'small', dbname 'picodata', scatter 'masters', picodata_version '$prune_release', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_s OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE notes (id bigint, body text) SERVER pico_s OPTIONS (sharding_key 'id');
});

# Runs $sql; returns its result and the instances whose storage counters for $table moved.
sub run_and_touched {
    my ($table, $sql) = @_;
    my $before = emu_counters($table);
    my $result = $node->safe_psql('postgres', $sql);
    sleep 2.2;    # every instance publishes its statistics within about a second
    my $after = emu_counters($table);
    return ($result, counters_moved($before, $after));
}

# ---- keyed statements carry no bucket_id ---------------------------------------------------------
sent();
my @keys100 = map { $_ * 3 } 1 .. 100;
my $in100 = join(', ', @keys100);
$node->safe_psql('postgres', qq{
SELECT name FROM users WHERE id = 5;
SELECT count(*) FROM users WHERE id IN (7, 8, 9);
UPDATE users SET v = v + 1 WHERE id = 11;
DELETE FROM users WHERE id = 12;
INSERT INTO users VALUES (12, 'back', 0);
SET plan_cache_mode = force_generic_plan;
PREPARE p(bigint) AS SELECT name FROM users WHERE id = \$1;
EXECUTE p(13); EXECUTE p(14); EXECUTE p(15);
PREPARE u(bigint) AS UPDATE users SET v = v WHERE id = \$1;
EXECUTE u(13); EXECUTE u(14);
SELECT count(*) FROM users u JOIN (VALUES (1::bigint), (2), (3)) k(id) ON u.id = k.id;
});
my @keyed = sent();
cmp_ok(scalar(@keyed), '>=', 11, scalar(@keyed) . ' keyed statements logged by the fronts');
is_deeply([ grep { /bucket_id/i } @keyed ], [], 'no keyed statement carries a bucket_id term')
  or diag(join("\n", @keyed));

# ---- a 100-key IN read: sent once, only the owners are touched --------------------------------------
my %owners = map { ($_->{master} => 1) } emu_locate('users', map { "[$_]" } @keys100);
my ($r, $t) = run_and_touched('users', "SELECT count(*), sum(id) FROM users WHERE id IN ($in100)");
my $sum = 0;
$sum += $_ for @keys100;
is($r, "100|$sum", '100-key IN read: every row once');
is_deeply($t, [ sort keys %owners ], '100-key IN read touched only the owners: ' . join(',', sort keys %owners));
my @in_sent = grep { /IN \(3, 6, 9/ } sent();
is(scalar(@in_sent), 1, '100-key IN read: one statement sent') or diag(join("\n", @in_sent));
unlike($in_sent[0] // '', qr/bucket_id/, '100-key IN read: no bucket_id list with the key list');

# ---- a masters scatter within the chain limit --------------------------------------------------------
like($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*) FROM notes'),
     qr/Routing: scatter to the 2 masters of tier "small": 127\.0\.0\.1:\d+ \(buckets 1-300\), 127\.0\.0\.1:\d+ \(buckets 301-600\)/,
     'EXPLAIN: 300 buckets per master stay within 512 chains: a masters scatter');
sent();
($r, $t) = run_and_touched('notes', 'SELECT count(*), sum(id) FROM notes');
is($r, '200|20100', 'masters scatter: every row once');
my @masters = sort map { $_->{master} } grep { $_->{tier} eq 'small' } @{ $status->{replicasets} };
is_deeply($t, [@masters], 'masters scatter touched the masters of the tier: ' . join(',', @masters));
my @scatter = grep { /FROM "notes"/ } sent();
is(scalar(@scatter), 2, 'masters scatter: one statement per master') or diag(join("\n", @scatter));
is(scalar(grep { /bucket_id IN \((\d+, ){299}\d+\)/ } @scatter), 2, 'each with the list of its 300 buckets');
my %to = map { /^(\d+):/ ? ($1 => 1) : () } @scatter;
is(scalar(keys %to), 2, 'sent to two different instances');
# The WHERE clause counts: two OR-ed terms times 300 buckets are 600 chains, over the limit, so
# each master gets its buckets in two statements (256 and 44 buckets: 512 and 88 chains).
my $two = 'SELECT count(*), sum(id) FROM notes WHERE id < 50 OR id > 150';
like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) $two"),
     qr/Routing: scatter to the 2 masters of tier "small": 127\.0\.0\.1:\d+ \(buckets 1-300 in 2 statements\), 127\.0\.0\.1:\d+ \(buckets 301-600 in 2 statements\)/,
     'EXPLAIN: two OR-ed terms over 300-bucket masters (600 chains): two statements per master');
sent();
is($node->safe_psql('postgres', $two), '99|10000', 'split masters scatter: every row once');
my @split = grep { /FROM "notes"/ } sent();
is(scalar(@split), 4, 'split masters scatter: two statements per master') or diag(join("\n", @split));
my @sizes = sort { $a <=> $b } map { my ($l) = /bucket_id IN \(([^)]*)\)/; scalar(split(/, /, $l // '')) } @split;
is_deeply(\@sizes, [ 44, 44, 256, 256 ], 'of 256 and 44 buckets each: within 512 chains');
my %split_to = map { /^(\d+):/ ? ($1 => 1) : () } @split;
is(scalar(keys %split_to), 2, 'split masters scatter: sent to the two masters');
# The inner side of a nested loop, read whole for its rescans: the statements to one master are
# sent one after the other there too.
is($node->safe_psql('postgres', q{
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
SELECT count(*) FROM (VALUES (1), (2)) v(x) JOIN notes n ON (n.id < 50 OR n.id > 150) AND n.id % 2 = v.x - 1}),
   '99', 'split masters scatter rescanned as the inner side of a nested loop: every row once');
# A LIMIT over the table alone goes with each statement: a master stops after its first rows
# instead of streaming its buckets, and the Limit here keeps the first rows of all of them.
sent();
is($node->safe_psql('postgres',
        'SELECT count(*), count(DISTINCT id), min(id) >= 1, max(id) <= 200 FROM (SELECT id FROM notes LIMIT 7 OFFSET 3) s'),
    '7|7|t|t', 'LIMIT 7 OFFSET 3 over a masters scatter: seven rows of the table');
my @limited = grep { /FROM "notes"/ } sent();
ok(@limited >= 1 && !grep({ !/bucket_id IN \([^)]*\) LIMIT 10\b/ } @limited),
   'each statement of the scatter carries LIMIT 10, after its bucket list') or diag(join("\n", @limited));
# Sorted here, the first rows need every row: no LIMIT goes with the statements.
is($node->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM (SELECT id FROM notes ORDER BY id DESC LIMIT 3) s'),
   '200,199,198', 'ORDER BY ... LIMIT 3 over a masters scatter: the last three keys');
my @sorted = grep { /FROM "notes"/ } sent();
ok(@sorted >= 2 && !grep({ /LIMIT/ } @sorted), 'no LIMIT sent when the rows are sorted here')
  or diag(join("\n", @sorted));
like($node->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT count(*) FROM notes WHERE NOT (body IN ('a', 'b') OR id > 3)}),
     qr/Routing: scatter to the 2 masters/, 'EXPLAIN: NOT (a OR b) is one chain per bucket: still a scatter');

# ---- a stale map sends a key to the wrong replicaset: the right rows anyway ------------------------
# (A bucket computed by another rule would do the same: the statement goes to a wrong instance, and
# without a bucket filter Picodata still answers by the key.)
my $loc = emu_json('locate', 'users', '--key', '[42]');
my $bucket = $loc->{bucket_id};
my ($other) = grep { $_ ne $loc->{replicaset} } map { $_->{name} } grep { $_->{tier} eq 'default' } @{ $status->{replicasets} };
my $old = "127.0.0.1:$port_of{$loc->{master}}";
# The bucket moves in the cluster; picoroute's map (read every 600 s) still names the old owner.
emu('move', 'default', $bucket, $bucket, $other);
is(emu_json('locate', 'users', '--key', '[42]')->{replicaset}, $other, "bucket $bucket moved to $other");
my $wrong = $node->safe_psql('postgres', "SELECT picoroute_master('default', $bucket)");
is($wrong, $old, "picoroute's stale map still sends bucket $bucket to $old");
is($node->safe_psql('postgres', 'SELECT name FROM users WHERE id = 42'), 'name_42',
   'stale map: the read by key still returns the row (Picodata forwards it)');
$node->safe_psql('postgres', 'UPDATE users SET v = 4242 WHERE id = 42');
is($node->safe_psql('postgres', 'SELECT v FROM users WHERE id = 42'), '4242',
   'stale map: the UPDATE by key still applied');
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT name FROM users WHERE id = 42'),
     qr/Remote SQL: SELECT "name" FROM "users" WHERE \("id" = 42\)(?! AND)[^\n]*\n\s+Routing: bucket $bucket -> \Q$wrong\E/,
     'EXPLAIN shows where it goes (the stale owner), and no bucket filter');
my @stale = grep { /"id" = 42/ } sent();
is_deeply([ grep { /bucket_id/ } @stale ], [], 'no statement of the stale case carries a bucket_id term');

$node->stop;
done_testing();
