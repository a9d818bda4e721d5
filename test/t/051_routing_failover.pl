# Routing through topology changes: a prepared statement across a bucket move, a stopped master
# (a 'masters' scatter fails as a whole; a point read is retried elsewhere), and a master switch
# during a bounded run of reads and writes with no lost or doubled rows.
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
  qw(emu emu_command emu_json emu_table start_emulator start_routing_node create_servers
  create_foreign_tables wait_for picodata_version picodata_has);

start_emulator();
emu_table('users', 'id int8, name text, v int8', rows => 100);
my %port_of = map { $_->{name} => $_->{port} } @{ emu_json('status', '--json')->{instances} };

my $node = start_routing_node(name => 'failover', admin => 1, refresh_interval => '200ms');

# Waits until `sql` returns `expected`; one test named `what`.
sub wait_for_is {
    my ($sql, $expected, $what) = @_;
    ok(wait_for($node, $sql, $expected, 10), $what);
}
create_servers($node, qw(pico pico_m));
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', qw(pico pico_m));

# A long-lived psql session, one statement at a time, errors captured.
my ($in, $out) = ('', '');
my $timer = IPC::Run::timeout(300);  # the whole session
my $session = IPC::Run::start(
    [ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=0', '-d', $node->connstr('postgres'), '-f', '-' ],
    '<', \$in, '>', \$out, '2>', \$out, $timer);
my $marker = 0;
sub session {
    my ($sql) = @_;
    $marker++;
    $out = '';
    $in .= "$sql\n\\echo __done_${marker}__\n";
    $session->pump until $out =~ /__done_${marker}__/ || $timer->is_expired;
    (my $result = $out) =~ s/__done_${marker}__\n?//;
    chomp $result;
    return $result;
}

# ---- a prepared statement across a bucket move --------------------------------------------------
my $loc = emu_json('locate', 'users', '--key', q{[5]});
my ($bucket, $from) = ($loc->{bucket_id}, $loc->{replicaset});
my $to = $from eq 'default_1' ? 'default_2' : 'default_1';
is(session(q{SET plan_cache_mode = force_generic_plan;
PREPARE p(bigint) AS SELECT name FROM users WHERE id = $1;
EXECUTE p(5);}), 'name_5', 'prepared statement before the move');
emu('move', 'default', $bucket, $bucket, $to);
# strict mode (forward=off) exists from 26.2.1-rc1 (capability forward); before, EXPLAIN EXECUTE alone shows the new owner
my $strict = picodata_has('forward');
emu('strict', 'on') if $strict;
wait_for_is("SELECT picoroute_master('default', $bucket)", "127.0.0.1:$port_of{\"${to}_1\"}",
         'the map follows the bucket move');
is(session('EXECUTE p(5);'), 'name_5',
   ($strict ? 'strict: ' : '') . 'the same prepared statement reaches the new owner');
like(session("EXPLAIN (COSTS OFF) EXECUTE p(5);"),
     qr/bucket $bucket -> 127\.0\.0\.1:$port_of{"${to}_1"}/, 'EXPLAIN EXECUTE shows the new owner');
emu('strict', 'off') if $strict;

# ---- a stopped master ---------------------------------------------------------------------------
# Warm the cache first, so that the stop also breaks an idle cached connection.
is(session('SELECT count(*) FROM users_m;'), '100', 'masters scatter before the stop');
my $key2 = 0;
for my $id (1 .. 100) {
    if (emu_json('locate', 'users', '--key', "[$id]")->{master} eq 'default_2_1') { $key2 = $id; last; }
}
is(session("SELECT name FROM users WHERE id = $key2;"), "name_$key2", 'point read before the stop');
emu('stop', 'default_2_1');
wait_for_is("SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 'f',
         'the map shows the stopped master offline');
# What fails here fails after picoroute.failover_wait: a short one keeps the file quick.
session("SET picoroute.failover_wait = '1s';");
my $r = session('SELECT count(*) FROM users_m;');
diag("masters scatter, master stopped: $r");
like($r, qr/ERROR:.*(no partial result|has no online master)/s,
     'a masters scatter with a stopped master fails as a whole');
unlike($r, qr/^\d+$/m, 'no partial count was returned');
$r = session('SELECT count(*) FROM users;');
diag("coordinator scatter, master stopped: $r");
like($r, qr/ERROR:/, 'a keyless read through a coordinator fails too (Picodata reads from masters)');
unlike($r, qr/^\d+$/m, 'and returns no partial count');
$r = session("SELECT name FROM users WHERE id = $key2;");
diag("point read, master stopped: $r");
like($r, qr/ERROR:/, 'a point read on the stopped master fails (read_preference leader)');
session('RESET picoroute.failover_wait;');
emu('start', 'default_2_1');
wait_for_is("SELECT is_online FROM picoroute_instances WHERE name = 'default_2_1'", 't',
         'the restarted master is online again');
is(session('SELECT count(*) FROM users_m;'), '100', 'masters scatter after the restart');

# ---- a master switch during reads and writes -----------------------------------------------------
my $switch = IPC::Run::start(emu_command('switch-master', 'default_1'),
                             '>', \my $sw_out, '2>&1', IPC::Run::timeout(90));
my (%acked, %failed, %maybe);
my ($reads, $read_errors, $i) = (0, 0, 0);
my %read_error_text;
my $deadline = time + 60;
my $after_switch = 0;
while (time < $deadline) {
    $i++;
    my $id = 100000 + $i;
    my $res = session("INSERT INTO users VALUES ($id, 'sw', $i);");
    if ($res eq '') { $acked{$id} = 1; }
    elsif ($res =~ /may have been applied/) { $maybe{$id} = 1; }
    else { $failed{$id} = $res; }
    my $probe = 1 + ($i % 100);
    my $read = session("SELECT name FROM users WHERE id = $probe;");
    $reads++;
    if ($read ne "name_$probe") { $read_errors++; $read_error_text{$read}++; }
    last if !$switch->pumpable && ++$after_switch > 10;
    sleep 0.2;
}
$switch->finish;
is($?, 0, 'switch-master finished') or diag($sw_out);
cmp_ok(scalar(keys %acked), '>', 10, 'writes were acknowledged during the run (' . scalar(keys %acked)
       . ' acked, ' . scalar(keys %failed) . ' failed, ' . scalar(keys %maybe) . ' unknown)');
my $last = 100000 + $i;
my %present = map { $_ => 1 } split /\n/, $node->safe_psql('postgres',
    "SELECT id FROM users WHERE id > 100000 AND id <= $last");
my $doubled = $node->safe_psql('postgres',
    "SELECT count(*) - count(DISTINCT id) FROM users WHERE id > 100000");
is($doubled, '0', 'no doubled rows');
my @lost = grep { !$present{$_} } sort keys %acked;
is_deeply(\@lost, [], 'every acknowledged write is stored');
my @phantom = grep { $present{$_} && !$acked{$_} && !$maybe{$_} } sort keys %present;
is_deeply(\@phantom, [], 'no write reported as failed was applied');
is($read_errors, 0, "reads kept working through the switch ($read_errors of $reads failed)")
  or diag(join("\n", map { "$read_error_text{$_} x $_" } sort keys %read_error_text));
# A write that was never sent, or that the old master refused before running it, waits for the new
# master (picoroute.failover_wait) and runs there; only a write lost after it was sent may fail,
# and its error says it may have been applied.
is(scalar(keys %failed), 0, 'no write failed but those whose outcome is unknown')
  or diag(join("\n", map { "write failed: $_" } sort values %failed));
my $new_master = $node->safe_psql('postgres',
    "SELECT name FROM picoroute_instances WHERE replicaset_name = 'default_1' AND is_master");
is($new_master, 'default_1_2', 'the map knows the new master');
is(session('SELECT count(*) FROM users_m;'), 100 + scalar(keys %present), 'masters scatter after the switch');

$in .= "\\q\n";
$session->finish;
$node->stop;
done_testing();
