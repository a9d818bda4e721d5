# Streaming scans: rows are read as they arrive, so a scan's memory does not grow with its row
# count; a LIMIT goes with the statement, or, satisfied here, stops the remote statement; a
# connection a scan is still reading can serve another statement of the session (nested loops,
# cursors, PL/pgSQL loops, subtransactions).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use Picoroute::TestCluster qw(emu emu_json emu_table start_emulator start_routing_node create_servers
  create_foreign_tables);

start_emulator(replicasets => 2, replication_factor => 1);

my $nrows = 100000;
emu_table('bulk', 'id int8, name text, note text, v int8', rows => $nrows);
emu_table('small', 'id int8, name text', rows => 100);

my $node = start_routing_node(name => 'streaming', refresh_interval => '300ms', map_timeout => 20);
create_servers($node, qw(pico pico_m));
create_foreign_tables($node, 'bulk', 'id bigint, name text, note text, v bigint', 'id', qw(pico pico_m));
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE small (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
});
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $sum = $nrows * ($nrows + 1) / 2;
is(q1('SELECT count(*), sum(id), count(DISTINCT name) FROM bulk'), "$nrows|$sum|$nrows",
   'coordinator scan: every row once');
is(q1('SELECT count(*), sum(id) FROM bulk_m'), "$nrows|$sum", 'masters scan (two streams): every row once');
is(q1(q{SELECT count(*) FROM bulk WHERE id IN (1, 2, 3, 99999)}), '4', 'routed scan over two owners');

# The backend's peak memory (VmHWM) hardly moves over a 100,000-row scan: rows are not kept.
my $peak = q{SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::int};
my @lines = split /\n/, q1("SELECT count(*) FROM small;\n$peak;\n"
    . "SELECT count(*) FROM bulk WHERE length(name) + length(note) > random();\n$peak;");
my ($before, $after) = ($lines[1], $lines[3]);
is($lines[2], $nrows, 'the measured scan read every row');
my $grown_kb = $after - $before;
diag("peak backend memory grew by $grown_kb kB over a $nrows-row scan");
ok($grown_kb < 4096, "a $nrows-row scan raises peak memory by less than 4 MB (got $grown_kb kB)");

# A LIMIT the statement carries: the answer is three rows, the connection stays cached.
is(q1('SELECT count(*) FROM bulk; SELECT count(*) FROM picoroute_connections()'), "$nrows\n1",
   'after a complete scan its connection stays cached');
is(q1(q{SELECT count(*) FROM (SELECT id FROM bulk LIMIT 3) s; SELECT count(*) FROM picoroute_connections()}),
   "3\n1", 'LIMIT sent with the statement: its connection stays cached');
# A LIMIT satisfied here (a filter evaluated here keeps it from the statement): the connection
# still receiving rows is closed (the server stops the statement), the rest is not read.
is(q1(q{SELECT count(*) FROM (SELECT id FROM bulk WHERE random() >= 0 LIMIT 3) s; SELECT count(*) FROM picoroute_connections()}),
   "3\n0", 'LIMIT satisfied here: the connection that was still receiving rows is closed');
my $status = emu_json('status', '--json');
my $active = 1;
for (1 .. 50) {
    $active = 0;
    for my $inst (grep { $_->{running} } @{ $status->{instances} }) {
        $active += emu('psql', $inst->{name}, '--', '-Atc',
            q{SELECT count(*) FROM pg_stat_activity WHERE usename = 'picoroute' AND state = 'active' AND query LIKE '%bulk%'});
    }
    last if $active == 0;
    sleep 0.1;
}
is($active, 0, 'LIMIT: no remote statement is left running');
is(q1('SELECT count(*) FROM bulk WHERE id <= 10'), '10', 'the next scan opens a new connection');

# A connection a scan is still reading, needed by another statement of the session: the scan
# reads the rest of its answer first and goes on from memory.
is(q1(q{SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
        SELECT count(*), sum(b.id) FROM bulk b JOIN small s ON s.id = b.id}), '100|5050',
   'nested loop of two scans on one instance (inner rescanned)');
is(q1(q{SET enable_hashjoin = off; SET enable_mergejoin = off;
        SELECT count(*), sum(b.id) FROM bulk b JOIN small s ON s.id = b.id}), '100|5050',
   'nested loop with a materialized inner scan');
my @fetched = split /\n/, q1(q{BEGIN;
DECLARE c CURSOR FOR SELECT id FROM bulk;
FETCH 1000 FROM c;
SELECT 'small ' || count(*) FROM small;
FETCH ALL FROM c;
COMMIT;});
my %seen = map { $_ => 1 } grep { /^\d+$/ } @fetched;
is(scalar(@fetched), $nrows + 1, 'cursor: every row fetched, and the scan in between');
is($fetched[1000], 'small 100', 'cursor: the scan between two fetches ran on the busy connection');
is(scalar(keys %seen), $nrows, 'cursor: each row once');
my ($ret, $out, $err) = $node->psql('postgres', q{DO $$
DECLARE r record; n bigint := 0; errors int := 0; k bigint;
BEGIN
  FOR r IN SELECT id FROM bulk LOOP
    n := n + 1;
    IF r.id % 10000 = 0 THEN
      BEGIN
        PERFORM 1 / 0;
      EXCEPTION WHEN division_by_zero THEN errors := errors + 1;
      END;
      SELECT count(*) INTO k FROM small;
    END IF;
  END LOOP;
  RAISE NOTICE 'rows % errors %', n, errors;
END $$});
like($err, qr/NOTICE:  rows $nrows errors 10/, 'PL/pgSQL loop over a stream with scans and aborted subtransactions inside');
is(q1('SELECT count(*) FROM bulk'), $nrows, 'a full scan afterwards');

# An error while the scan streams ends the statement; the session goes on.
($ret, $out, $err) = $node->psql('postgres', q{SELECT id, 1 / (id - 50000) FROM bulk});
like($err, qr/division by zero/, 'a local error in the middle of a stream');
is(q1('SELECT count(*) FROM bulk WHERE id > 99990; SELECT count(*) FROM picoroute_connections() WHERE state = \'busy\''),
   "10\n0", 'the session goes on; no connection is left busy');

$node->stop;
done_testing();
