# Every error of a write that may have written somewhere says where, whatever ended it: a multi-row
# INSERT stopped by statement_timeout or a cancel while one master is stopped (its rows of the live
# replicaset are committed, the others wait for a master), an INSERT ... SELECT whose next row fails
# locally after two batches were sent, a COPY whose input turns bad after a batch, a write whose
# connection is lost after it was sent (40003), one that meets a duplicate key on one owner (23505),
# and a TRUNCATE of two tables whose second fails after the first was truncated. Picodata commits
# each remote statement on its own; the DETAIL gives the rows each instance committed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(sleep time);
use Picoroute::TestCluster
  qw(emu emu_json emu_table emu_private_psql start_emulator start_routing_node create_servers
  create_foreign_tables wait_for picodata_has emu_locate);

$ENV{PICOEMU_QUERY_TIMEOUT} = 3;
start_emulator(replication_factor => 1);
emu_table('users', 'id int8, name text, v int8');
emu_table('other', 'id int8, v int8', rows => 20);
my %port_of = map { $_->{name} => $_->{port} } @{ emu_json('status', '--json')->{instances} };
my $node = start_routing_node(name => 'interrupted', refresh_interval => '200ms',
    extra_conf => "picoroute.remote_write_in_transaction = 'off'\n");
create_servers($node, 'pico');
$node->safe_psql('postgres', q{
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico
  OPTIONS (sharding_key 'id', batch_size '10');
CREATE FOREIGN TABLE other (id bigint, v bigint) SERVER pico OPTIONS (sharding_key 'id');
});
my $local = picodata_has('local_execution');
my $addr1 = "127.0.0.1:$port_of{default_1_1}";

my %keys;
my @located = emu_locate('users', map { "[$_]" } 1000 .. 1100);
push @{ $keys{ $located[ $_ - 1000 ]{replicaset} } }, $_ for 1000 .. 1100;
sub stored {
    my ($master, $where) = @_;
    return emu_private_psql($master, "SELECT count(*) FROM _picoemu_local.users WHERE $where");
}
sub values_of { return join(', ', map { "($_, 'i', 0)" } @_); }

# ---- statement_timeout and cancel while a master is stopped -----------------------------------
emu('stop', 'default_2_1');
ok(wait_for($node, "SELECT NOT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
   'the map shows the master of default_2 offline');
my @mine = @{ $keys{default_1} }[0, 1];
my @theirs = @{ $keys{default_2} }[0];
my ($ret, $out, $err) = $node->psql('postgres', "SET picoroute.failover_wait = '60s';"
    . "SET statement_timeout = '1500ms'; INSERT INTO users VALUES " . values_of(@mine, @theirs));
isnt($ret, 0, 'a multi-row INSERT stopped by statement_timeout fails');
like($err, qr/canceling statement due to statement timeout/, 'with the timeout');
if ($local) {
    is(stored('default_1_1', "id IN ($mine[0], $mine[1])"), '2', "default_1's rows were committed");
    like($err, qr/DETAIL:.*2 rows of this statement were already committed on Picodata \(\Q$addr1\E: 2\); they are not undone\./s,
        'and the error says so, with the instance');
} else {
    is(stored('default_1_1', "id IN ($mine[0], $mine[1])"), '0',
       'without a local path every part waits for the master: nothing was sent');
    unlike($err, qr/rows of this statement were already committed/, 'and the error claims no row');
}

# A cancel from another session, the same way.
@mine = @{ $keys{default_1} }[2, 3];
my ($c_out, $c_err) = ('', '');
my $h = IPC::Run::start(
    [ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', "SET picoroute.failover_wait = '60s'",
      '-c', 'INSERT INTO users VALUES ' . values_of(@mine, @theirs) ],
    '>', \$c_out, '2>', \$c_err, IPC::Run::timeout(60));
ok(wait_for($node, "SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE 'INSERT INTO users VALUES%'",
    't', 20), 'the INSERT waits for a master of default_2');
sleep 1;
$node->safe_psql('postgres',
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'INSERT INTO users VALUES%'");
$h->finish;
like($c_err, qr/canceling statement due to user request/, 'a cancel ends it');
if ($local) {
    like($c_err, qr/DETAIL:.*2 rows of this statement were already committed on Picodata \(\Q$addr1\E: 2\)/s,
        'and its error says which rows are committed, where');
    is(stored('default_1_1', "id IN ($mine[0], $mine[1])"), '2', 'as they are');
} else {
    unlike($c_err, qr/rows of this statement were already committed/, 'nothing was sent, nothing claimed');
}
emu('start', 'default_2_1');
ok(wait_for($node, "SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
   'default_2_1 is back');
is(stored('default_2_1', "id = $theirs[0]"), '0', 'the waiting part was never sent to default_2');

# ---- a local error after two batches -------------------------------------------------------------
($ret, $out, $err) = $node->psql('postgres',
    'INSERT INTO users SELECT g, \'b\', 100 / (g - 5025) FROM generate_series(5001, 5030) g');
isnt($ret, 0, 'an INSERT ... SELECT whose 25th row fails locally fails');
like($err, qr/division by zero/, 'with the local error');
like($err, qr/DETAIL:.*20 rows of this statement were already committed on Picodata \(.*\); they are not undone\./s,
    'which says the two batches sent before it are committed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM users WHERE id BETWEEN 5001 AND 5030'), '20', 'they are');

# ---- COPY whose input turns bad after a batch ----------------------------------------------------
my $copy = join('', map { "$_\tc\t1\n" } 6001 .. 6015) . "oops\tc\t1\n";
($ret, $out, $err) = $node->psql('postgres', "COPY users FROM STDIN;\n$copy\\.\n");
isnt($ret, 0, 'a COPY whose 16th line is bad fails');
like($err, qr/invalid input syntax for type bigint/, 'on that line');
like($err, qr/DETAIL:.*10 rows of this statement were already committed on Picodata/s,
    'and says the batch sent before it is committed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM users WHERE id BETWEEN 6001 AND 6015'), '10', 'it is');

# ---- a write lost after it was sent: 40003, with what the other owner committed -----------------
# The row of default_2 waits on its storage (a trigger sleeps), then its master stops: the
# connection is lost after the statement was sent, so its outcome there is unknown (SQLSTATE 40003,
# statement_completion_unknown), and the error also says what default_1 committed.
my $addr2 = "127.0.0.1:$port_of{default_2_1}";
my ($slow) = @{ $keys{default_2} }[1];
@mine = @{ $keys{default_1} }[4, 5];
emu_private_psql('default_2_1', q{
CREATE FUNCTION public.picoroute_test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.name = 'slow' THEN PERFORM pg_sleep(30); END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER picoroute_test_slow BEFORE INSERT ON _picoemu_local.users
  FOR EACH ROW EXECUTE FUNCTION public.picoroute_test_slow();
});
my $l_out = '';
my $lost = IPC::Run::start(
    [ 'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'), '-c',
      "INSERT INTO users VALUES ($mine[0], 'i', 0), ($mine[1], 'i', 0), ($slow, 'slow', 0)" ],
    '>', \$l_out, '2>&1', IPC::Run::timeout(90));
ok(wait_for($node, "SELECT count(*) FROM users WHERE id IN ($mine[0], $mine[1])", '2', 20),
   "default_1's rows are committed while default_2's waits on its storage");
emu('stop', 'default_2_1');
$lost->finish;
like($l_out, qr/ERROR:  40003: picoroute: lost the connection to Picodata instance \Q$addr2\E while it ran a write/,
     'the lost write fails with 40003 (statement_completion_unknown)');
like($l_out, qr/DETAIL:.*may have been applied on instance \Q$addr2\E.*2 rows of this statement were already committed on Picodata \(\Q$addr1\E: 2\); they are not undone\./s,
     'its DETAIL says where the outcome is unknown and what the other owner committed');
emu('start', 'default_2_1');
ok(wait_for($node, "SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't', 30),
   'default_2_1 is back');
emu_private_psql('default_2_1', 'DROP TRIGGER picoroute_test_slow ON _picoemu_local.users;'
    . ' DROP FUNCTION public.picoroute_test_slow();');
is(stored('default_2_1', "id = $slow"), '0', 'the stopped storage did not commit the slow row');

# A remote error mapped to PostgreSQL's SQLSTATE (a duplicate key, 23505) says the same: the row of
# default_2 is committed, that of default_1 already existed.
my ($fresh) = @{ $keys{default_2} }[2];
($ret, $out, $err) = $node->psql('postgres',
    "\\set VERBOSITY verbose\nINSERT INTO users VALUES ($mine[0], 'dup', 0), ($fresh, 'd', 0);");
like($err, qr/ERROR:  23505: .*Duplicate key exists in unique index/, 'a duplicate key on one owner is 23505');
like($err, qr/DETAIL:.*1 rows of this statement were already committed on Picodata \(\Q$addr2\E: 1\); they are not undone\./s,
     'and its DETAIL says what the other owner committed');

# ---- TRUNCATE of two tables, the second failing after the first is truncated ----------------------
# One session: it checks both declarations at their first use, then the second table is dropped on
# Picodata, so its TRUNCATE fails there, after the first one's.
my ($in, $s_out) = ('', '');
my $session = IPC::Run::start([ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=0', '-d', $node->connstr('postgres') ],
    '<', \$in, '>', \$s_out, '2>', \$s_out, IPC::Run::timeout(120));
sub session {
    my ($sql, $mark) = @_;
    $s_out = '';
    $in .= "$sql\n\\echo __${mark}__\n";
    $session->pump until $s_out =~ /__${mark}__/;
    return $s_out;
}
is(session('SELECT (SELECT count(*) FROM other) > 0 AND (SELECT count(*) FROM users) > 0;', 1), "t\n__1__\n",
   'both tables hold rows (and their declarations are checked)');
emu('drop-table', 'other');
my $t_err = session('TRUNCATE users, other;', 2);
like($t_err, qr/ERROR:.*other/, 'TRUNCATE of two tables fails on the second, dropped on Picodata');
like($t_err, qr/DETAIL:.*A statement of it that reports no row count \(TRUNCATE TABLE\) was already applied on instance 127\.0\.0\.1:\d+; that is not undone\./s,
    'and says the first was truncated');
$in .= "\\q\n";
$session->finish;
is($node->safe_psql('postgres', 'SELECT count(*) FROM users'), '0', 'as it was');

$node->stop;
done_testing();
