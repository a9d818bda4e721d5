# A streaming scan that must hand its connection over to another statement of the session (a cursor
# left open between fetches, or a PL/pgSQL loop, then another scan on the same instance in between)
# keeps the rest of its answer in a tuplestore bounded by work_mem: the backend's memory does not
# grow with the rows left, the rows beyond work_mem go to a temporary file, every row is still
# served once and in order, and a statement_timeout during a long hand-over ends that statement
# with 57014 while the cursor, kept by a savepoint, goes on.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use Picoroute::TestCluster qw(emu_json emu_private_psql emu_table start_emulator start_routing_node
  create_servers);

my $emu_dir = start_emulator(replicasets => 2, replication_factor => 1);

# 100,000 rows of about 220 bytes: some 22 MB of text to hold when the scan hands over its
# connection right after its first row, under a work_mem of 64kB (its minimum): 340 times work_mem,
# so that rows kept in memory would show far above the bounds below (4 MB of memory, more than
# 4 MB of temporary file). Each instance's half (11 MB) is also well beyond what the sockets and
# the fronts buffer (about 2 MB a connection) when the fronts are stopped below.
my $nrows = 100000;
emu_table('big', 'id int8, pad text', rows => $nrows);
emu_table('small', 'id int8, name text', rows => 100);
for my $inst (grep { $_->{running} } @{ emu_json('status', '--json')->{instances} }) {
    emu_private_psql($inst->{name}, q{UPDATE _picoemu_local.big SET pad = rpad(pad, 200, 'x') || id});
}

my $node = start_routing_node(name => 'handover', refresh_interval => '300ms', map_timeout => 20);
create_servers($node, qw(pico));
$node->safe_psql('postgres', q{
CREATE FOREIGN TABLE big (id bigint, pad text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE small (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
-- The rows left in a cursor: their count and checksums.
CREATE FUNCTION drain(c refcursor) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; n bigint := 0; ids numeric := 0; pads numeric := 0;
BEGIN
  LOOP
    FETCH c INTO r;
    EXIT WHEN NOT FOUND;
    n := n + 1;
    ids := ids + r.id;
    pads := pads + length(r.pad) + hashtext(r.pad);
  END LOOP;
  RETURN n || '|' || ids || '|' || pads;
END $$;
});
sub q1 { return $node->safe_psql('postgres', $_[0]); }

my $whole = q1(q{SELECT count(*) || '|' || sum(id) || '|' || sum(length(pad) + hashtext(pad)) FROM big});
my $sum = $nrows * ($nrows + 1) / 2;
like($whole, qr/^$nrows\|$sum\|/, 'a plain scan reads every row once');
# That scan read in chunks of at most picoroute.keyless_row_max rows (4000): a hand-over then holds
# at most a chunk. The hand-over of a whole answer is what the rest of the file tests: the bound is
# lifted for every session from here on.
$node->safe_psql('postgres', 'ALTER DATABASE postgres SET picoroute.keyless_row_max = 0');

# One session: a cursor reads its first row, then another scan needs the connection it streams
# from. The backend's peak memory (VmHWM) is taken before and after that hand-over, the temporary
# files while the cursor is still open; the cursor then serves the rest.
my $peak = q{SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')
  || ' ' || extract(epoch FROM clock_timestamp())};
my @out = split /\n/, q1(qq{SET work_mem = '64kB';
BEGIN;
DECLARE c CURSOR FOR SELECT id, pad FROM big;
FETCH 1 FROM c;
$peak;
SELECT 'small ' || count(*) FROM small;
$peak;
SELECT count(*) || ' ' || coalesce(sum(size), 0) FROM pg_ls_tmpdir();
SELECT drain('c');
COMMIT;
SELECT count(*) FROM picoroute_connections() WHERE state = 'busy';});
is(scalar(@out), 7, 'the session printed every answer') or diag(join("\n", @out));
my ($first, $before, $small, $after, $tmp, $rest, $busy) = @out;
my ($first_id, $first_pad) = split /\|/, $first;
is($small, 'small 100', 'the scan between two fetches ran on the connection the cursor streams from');
my ($hwm_before, $clock_before) = split / /, $before;
my ($hwm_after, $clock_after) = split / /, $after;
my $grown_kb = $hwm_after - $hwm_before;
my $handover_s = $clock_after - $clock_before;
diag(sprintf('peak backend memory grew by %d kB over the hand-over of %d rows (%.2f s)',
             $grown_kb, $nrows - 1, $handover_s));
ok($grown_kb < 4096, "the hand-over raises peak memory by less than 4 MB (got $grown_kb kB)");
my ($tmp_files, $tmp_bytes) = split / /, $tmp;
diag("temporary files while the cursor is open: $tmp_files, $tmp_bytes bytes");
ok($tmp_files >= 1 && $tmp_bytes > 4 * 1024 * 1024,
   "the rows beyond work_mem went to a temporary file ($tmp_files files, $tmp_bytes bytes)");
my ($n, $ids, $pads) = split /\|/, $rest;
my ($wn, $wids, $wpads) = split /\|/, $whole;
my $first_pads = q1(qq{SELECT length(pad) + hashtext(pad) FROM big WHERE id = $first_id});
is($n + 1, $wn, 'the cursor served every row');
is($ids + $first_id, $wids, 'the cursor served each row once (ids)');
is($pads + $first_pads, $wpads, 'the cursor served the rows unchanged (checksum of the texts)');
is($busy, '0', 'no connection is left busy');
is(q1('SELECT count(*) FROM pg_ls_tmpdir()'), '0', 'the temporary file is gone with the cursor');

# The same from a PL/pgSQL loop over the scan with a query on the same instance in its body.
my ($ret, $stdout, $stderr) = $node->psql('postgres', q{SET work_mem = '64kB';
DO $$
DECLARE r record; n bigint := 0; ids numeric := 0; k bigint; hwm int;
BEGIN
  FOR r IN SELECT id, pad FROM big LOOP
    n := n + 1;
    ids := ids + r.id;
    IF n = 1 THEN
      hwm := substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::int;
      SELECT count(*) INTO k FROM small;
      RAISE NOTICE 'grown % kB, small %',
        substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::int - hwm, k;
    END IF;
  END LOOP;
  RAISE NOTICE 'rows % ids %', n, ids;
END $$;
SELECT count(*) FROM pg_ls_tmpdir();});
my ($loop_kb) = $stderr =~ /grown (-?\d+) kB, small 100\b/;
diag('peak backend memory grew by ' . ($loop_kb // '?') . ' kB over the hand-over inside the loop');
ok(defined $loop_kb && $loop_kb < 4096, 'PL/pgSQL loop: the hand-over raises peak memory by less than 4 MB')
  or diag($stderr);
like($stderr, qr/rows $nrows ids $sum\b/, 'PL/pgSQL loop: every row once');
is($stdout, '0', 'PL/pgSQL loop: the temporary file is gone with the loop');

# A statement_timeout while the hand-over reads the rest of a long answer: the fronts of the
# instances are stopped (SIGSTOP) right after the first fetch, so the hand-over reads what had
# arrived (more than work_mem: a temporary file) and then waits for rows that do not come. The
# statement that wanted the connection ends with 57014 at its timeout; rolled back to a savepoint,
# the cursor lives on and, the fronts resumed, serves its rows read ahead and then the rest.
my @fronts = map { slurp_file("$emu_dir/$_->{name}/front.pid") =~ /(\d+)/ }
  grep { $_->{front_running} } @{ emu_json('status', '--json')->{instances} };
my $started = time();
($ret, $stdout, $stderr) = $node->psql('postgres', qq{SELECT count(*) FROM small;
SET work_mem = '64kB';
BEGIN;
DECLARE c CURSOR FOR SELECT id, pad FROM big;
FETCH 1 FROM c;
SELECT pg_sleep(0.5);
SAVEPOINT s;
COPY (SELECT 1) TO PROGRAM 'cat >/dev/null; kill -STOP @fronts';
SET statement_timeout = '500ms';
SELECT 'small ' || count(*) FROM small;
ROLLBACK TO s;
SELECT count(*) || ' ' || coalesce(sum(size), 0) FROM pg_ls_tmpdir();
COPY (SELECT 1) TO PROGRAM 'cat >/dev/null; kill -CONT @fronts';
SET statement_timeout = 0;
SELECT drain('c');
COMMIT;
SELECT count(*) FROM picoroute_connections() WHERE state = 'busy';
SELECT count(*) FROM pg_ls_tmpdir();},
    on_error_stop => 0, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
kill 'CONT', @fronts;
my $took = time() - $started;
diag(sprintf('the session with the cancelled hand-over took %.2f s', $took));
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
     'a statement_timeout during the hand-over ends the statement with 57014')
  or diag($stderr);
my @lines = split /\n/, $stdout;
is(scalar(@lines), 7, 'the session printed every answer but the cancelled one') or diag($stdout);
my (undef, $first_c, undef, $tmp_c, $rest_c, $busy_c, $tmp_after) = @lines;
($first_id) = split /\|/, $first_c // '';
($tmp_files, $tmp_bytes) = split / /, $tmp_c // '0 0';
diag("temporary files after the cancelled hand-over: $tmp_files, $tmp_bytes bytes");
cmp_ok($tmp_files, '>=', 1, 'the cancelled hand-over had read rows beyond work_mem into a temporary file');
($n, $ids, $pads) = split /\|/, $rest_c // '';
$first_pads = q1(qq{SELECT length(pad) + hashtext(pad) FROM big WHERE id = $first_id});
is($n + 1, $wn, 'after the cancel the cursor served every row');
is($ids + $first_id, $wids, 'after the cancel the cursor served each row once');
is($pads + $first_pads, $wpads, 'after the cancel the cursor served the rows unchanged');
is($busy_c, '0', 'after the cancel no connection is left busy');
is($tmp_after, '0', 'no temporary file is left');
is(q1(q{SELECT count(*) FROM small}), '100', 'a new session reads as before');

# A single 100 MB value. Reading it costs the backend about three copies while its row is
# converted (libpq's input buffer, the row libpq parsed, the value made from it) and four while it
# is sent on to the client (the row libpq parsed is freed as soon as the value is made, postgres_fdw
# peaks the same); libpq keeps its input buffer at the size of the largest message for the
# connection's life, so picoroute closes such a connection at the end of the transaction: after
# it the backend holds the value no more.
my $mb = 100;
emu_table('blob', 'id int8, v text', rows => 2);
for my $inst (grep { $_->{running} } @{ emu_json('status', '--json')->{instances} }) {
    emu_private_psql($inst->{name},
        qq{UPDATE _picoemu_local.blob SET v = repeat(md5(id::text), $mb * 1024 * 1024 / 32) WHERE id = 1});
}
$node->safe_psql('postgres',
    q{CREATE FOREIGN TABLE blob (id bigint, v text) SERVER pico OPTIONS (sharding_key 'id')});
my $mem = q{SELECT 'mem ' || substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')
  || ' ' || substring(pg_read_file('/proc/self/status') from 'VmRSS:\s+(\d+)')};
my %read_as = (
    'converted'      => 'SELECT length(v), md5(v) = md5(repeat(md5(id::text), 100 * 1024 * 1024 / 32)) FROM blob WHERE id = 1',
    'sent to client' => 'SELECT v FROM blob');
for my $how (sort keys %read_as) {
    my ($rc, $out, $err) = $node->psql('postgres', "$mem;\n$read_as{$how} \\g /dev/null\n$mem;");
    my @m = $out =~ /^mem (\d+) (\d+)$/mg;
    is(scalar(@m), 4, "$how: memory read before and after") or diag("$out $err");
    my ($hwm0, $rss0, $hwm1, $rss1) = @m;
    my ($grown, $kept) = (($hwm1 - $hwm0) / 1024, ($rss1 - $rss0) / 1024);
    diag(sprintf('%s: a %d MB value raised the peak by %.0f MB; %.0f MB kept after the statement',
                 $how, $mb, $grown, $kept));
    my $bound = $how eq 'converted' ? 3.3 : 4.3;
    ok($grown < $bound * $mb, "$how: the peak grows by less than $bound x the value ($grown MB)");
    ok($kept < 16, "$how: the backend keeps less than 16 MB of it after the transaction ($kept MB)");
}
is(q1('SELECT length(v) FROM blob WHERE id = 1'), $mb * 1024 * 1024, 'the value arrives whole');
is(q1(q{SELECT md5(v) = md5(repeat(md5('1'), 100 * 1024 * 1024 / 32)) FROM blob WHERE id = 1}), 't',
   'the value arrives unchanged');

$node->stop;
done_testing();
