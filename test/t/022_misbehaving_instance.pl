# An instance that never answers, or answers what Picodata never sends, against every path that waits
# on a remote answer: the first-use declaration check, IMPORT FOREIGN SCHEMA, ANALYZE, a routed read,
# a streaming scan, a write, picoroute_exec, the worker. Each ends on statement_timeout with 57014 at once, sends
# nothing after it (a local interrupt is never taken for a remote error) and no cancel request
# (Picodata hands out no cancel key); a COPY answer closes the connection with a clear error instead
# of spinning; the backend stays usable. A 4 MB error text with an invalid byte reaches the client
# and the log cut to 8 kB and as valid UTF-8. The instance is test/emulator/fake_instance.py, put in the
# map with picoroute_apply_events (admitted by allowed_hosts).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use Picoroute::TestCluster qw(start_picoroute_node start_fake_instance fake_log);

my $rules = PostgreSQL::Test::Utils::tempdir('rules') . '/rules';
# _pico_table (the declaration check, IMPORT) first never answers, then answers with no row.
PostgreSQL::Test::Utils::append_to_file($rules, "_pico_table=silent\n");
my $fake = start_fake_instance('--rules-file', $rules,
    '--rule', 'hang_t=silent',
    '--rule', 'copyin_t=copy-in',
    '--rule', 'copyout_t=copy-out',
    '--rule', 'unknown_t=unknown',
    '--rule', 'bigerr_t=big-error',
    '--rule', 'badbyte_t=bad-byte',
    '--rule', 'SELECT .* FROM "quiet_t"=rows:',
    # Errors as Picodata words them (core/routing/answer.h), behind its prefixes.
    '--rule', 'dqltimeout_t=error:XX000:sbroad: dql timeout exceeded',
    '--rule', 'onrs_t=error:XX000:sbroad: Error on replicaset r1: Duplicate key exists in unique index',
    '--rule', 'localref_t=error:XX000:sbroad: failed to add local bucket reference: Timeout exceeded',
    '--rule', 'own_t=error:XX000:sbroad: Duplicate key exists in unique index',
    '--rule', 'peer_t=error:XX000:sbroad: Error on replicaset r1: Peer closed',
    '--rule', 'vdbe_t=error:XX000:sbroad: Error on replicaset r1: Reached a limit on max executed vdbe opcodes');
my $port = $fake->{port};

sub logged { return fake_log($fake); }
# The statements run that match $re, not counting the route check's EXPLAIN of a table's first keyed
# statement (README: Routing that verifies itself).
sub executions_like {
    my ($re) = @_;
    return scalar grep { ($_->{event} // '') =~ /^(query|execute)$/ && $_->{sql} =~ $re && $_->{sql} !~ /^EXPLAIN /i }
      @{ logged() };
}
sub statements_like {
    my ($re) = @_;
    return scalar grep { ($_->{event} // '') =~ /^(query|parse)$/ && $_->{sql} =~ $re } @{ logged() };
}

my $node = start_picoroute_node(
    name => 'misbehaving',
    conninfo => "host=127.0.0.1 port=$port dbname=picodata user=picoroute password=picoroute",
    extra_conf => "picoroute.source = 'push'\npicoroute.allowed_hosts = '127.0.0.1'\n");
$node->safe_psql('postgres', qq{
SELECT picoroute_apply_events('[
  {"op":"replace","map":"tier","name":"default","bucket_count":3000},
  {"op":"replace","map":"replicaset","replicaset_uuid":"r1","tier":"default","current_master_uuid":"i1"},
  {"op":"replace","map":"instance","instance_uuid":"i1","replicaset_uuid":"r1","current_state":"Online","address":"127.0.0.1:$port"},
  {"op":"replace","map":"bucket","tier":"default","bucket_id":{"start":1,"end":3000},"current_replicaset_uuid":"r1"}]');
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE hang_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE copyin_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE copyout_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE unknown_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE quiet_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE bigerr_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE badbyte_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
});

# Runs `sql` under a statement_timeout (1 s unless given); returns (stderr, seconds). The seconds
# are the server's clock read right before and right after the statement, in the same session.
my @overruns;
sub timed {
    my ($sql, $timeout) = @_;
    $timeout //= '1s';
    my $clock = q{SELECT 'clock ' || extract(epoch FROM clock_timestamp());};
    my ($ret, $out, $err) = $node->psql('postgres',
        "SET statement_timeout = '$timeout';\n$clock\n$sql;\nSET statement_timeout = 0;\n$clock",
        on_error_stop => 0);
    my @clock = $out =~ /^clock ([0-9.]+)$/mg;
    my $secs = @clock == 2 ? $clock[1] - $clock[0] : 99;
    (my $limit = $timeout) =~ s/s$//;
    push @overruns, $secs - $limit if $err =~ /statement timeout/;
    return ($err, $secs);
}
sub backend_usable {
    my ($what) = @_;
    is($node->safe_psql('postgres', 'SELECT 42'), '42', "$what: the server still answers");
}

# ---- the first-use declaration check waits on _pico_table that never answers ----------------------
my ($err, $secs) = timed("UPDATE quiet_t SET name = 'x' WHERE id = 6");
like($err, qr/canceling statement due to statement timeout/, 'declaration check: 57014 on statement_timeout');
ok($secs < 1.9, "declaration check: returned at once (${secs}s)");
is(statements_like(qr/^UPDATE/), 0, 'declaration check: the UPDATE was never sent after the interrupt');
backend_usable('declaration check');

# ---- IMPORT FOREIGN SCHEMA reads _pico_table --------------------------------------------------------
$node->safe_psql('postgres', 'CREATE SCHEMA imported');
($err, $secs) = timed('IMPORT FOREIGN SCHEMA public LIMIT TO (t1) FROM SERVER pico INTO imported');
like($err, qr/canceling statement due to statement timeout/, 'IMPORT: 57014 on statement_timeout');
ok($secs < 1.9, "IMPORT: returned at once (${secs}s)");

# From here on _pico_table answers (no such table: the declarations go unchecked), so that the
# checks at first use do not hide the paths under test.
unlink $rules;
PostgreSQL::Test::Utils::append_to_file($rules, "_pico_table=rows:\n");

# ---- a routed read, a streaming scan, a write and picoroute_exec on an instance that never answers -
my %paths = (
    'routed read' => 'SELECT * FROM hang_t WHERE id = 1',
    'streaming scan' => 'SELECT * FROM hang_t',
    'write' => "UPDATE hang_t SET name = 'x' WHERE id = 1",
    'picoroute_exec' => q{SELECT * FROM picoroute_exec('default', 1, 'SELECT 1 FROM hang_t') AS t(x int)},
    'ANALYZE' => 'ANALYZE hang_t',
);
for my $path (sort keys %paths) {
    ($err, $secs) = timed($paths{$path});
    like($err, qr/canceling statement due to statement timeout/, "$path: 57014 on statement_timeout");
    ok($secs < 1.9, "$path: returned at once (${secs}s)");
}
like((timed($paths{write}))[0],
    qr/may still run to its end on instance 127\.0\.0\.1:$port and be applied there: Picodata cannot cancel a statement/,
    'write: the DETAIL says the write may still be applied');
backend_usable('after the timeouts');

# ---- answers Picodata never sends -------------------------------------------------------------------
# The connection is closed with a clear error; a read is tried once more after a short wait for a
# refresh of the map (at most 2 s, as for any lost connection), then fails with that error.
for my $case ([ 'copyin_t', 'COPY IN' ], [ 'copyout_t', 'COPY OUT' ]) {
    my ($table, $what) = @$case;
    for my $sql ("SELECT * FROM $table WHERE id = 1", "SELECT * FROM $table",
        "SELECT * FROM picoroute_exec('default', 1, 'SELECT 1 FROM $table') AS t(x int)") {
        ($err, $secs) = timed($sql, '20s');
        like($err, qr/COPY state, which Picodata never does; the connection was closed/,
            "$what answer to <$sql>: a clear error");
        ok($secs < 8, "$what answer to <$sql>: no spin, no wait beyond the retry (${secs}s)");
    }
}
backend_usable('after the COPY answers');
($err, $secs) = timed('SELECT * FROM unknown_t WHERE id = 1', '20s');
like($err, qr/ERROR:  unexpected response from server.*CONTEXT:  remote SQL on Picodata instance 127\.0\.0\.1:$port/s,
    'an unknown message type: an error naming the instance');
ok($secs < 8, "an unknown message type: no spin (${secs}s)");
backend_usable('after an unknown message');

# ---- what the DETAIL of a failed write says: only what Picodata's error proves ---------------------
$node->safe_psql('postgres', join("\n", map {
    "CREATE FOREIGN TABLE ${_}_t (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');" }
    qw(dqltimeout onrs localref own peer vdbe)));
my %detail = (
    dqltimeout => qr/failed on instance 127\.0\.0\.1:$port after it was sent on to a storage: it may have been applied there\./,
    onrs => qr/failed on instance 127\.0\.0\.1:$port after it was sent on to a storage: it may have been applied there\./,
    # A refusal before running is sent again; here no other instance can take it.
    localref => qr/instance 127\.0\.0\.1:$port refused the statement before running it \(sbroad: failed to add local bucket reference/,
    own => qr/DETAIL:  The statement failed on instance 127\.0\.0\.1:$port\.\s*(\n|$)/,
);
for my $t (sort keys %detail) {
    my ($ret, $out, $e) = $node->psql('postgres',
        "SET picoroute.failover_wait = 0; UPDATE ${t}_t SET name = 'x' WHERE id = 1");
    like($e, $detail{$t}, "a write answered like ${t}_t: its DETAIL says what is known");
    unlike($e, qr/not applied there/, "a write answered like ${t}_t: it claims nothing more");
}
# A read is sent again after the coordinator lost its connection to a replicaset, not after a
# storage's own error behind the same prefix.
my $before = executions_like(qr/FROM "peer_t"/);
$node->psql('postgres', "SET picoroute.failover_wait = '1s'; SELECT * FROM peer_t WHERE id = 1");
cmp_ok(executions_like(qr/FROM "peer_t"/) - $before, '>=', 2,
       'a read answered "Error on replicaset ...: Peer closed" is sent again');
$before = executions_like(qr/FROM "vdbe_t"/);
$node->psql('postgres', "SET picoroute.failover_wait = '1s'; SELECT * FROM vdbe_t WHERE id = 1");
is(executions_like(qr/FROM "vdbe_t"/) - $before, 1, "a read answered with a storage's own error is not");
backend_usable('after the remote errors');

# ---- a 4 MB error text with a raw 0xFF byte ---------------------------------------------------------
# The message is cut to 8 kB at a character boundary and made valid UTF-8 before it reaches the
# client and the server log.
for my $sql ('SELECT * FROM bigerr_t WHERE id = 1',
    q{SELECT * FROM picoroute_exec('default', 1, 'SELECT 1 FROM bigerr_t') AS t(x int)}) {
    my $log_offset = -s $node->logfile;
    ($err, $secs) = timed($sql, '20s');
    my ($message) = $err =~ /ERROR:  (remote failure: [^\n]*)/;
    ok(defined $message, "big error <$sql>: the remote message reaches the client") or diag(substr($err, 0, 300));
    $message //= '';
    cmp_ok(length($message), '<=', 8192, "big error <$sql>: cut to 8 kB (" . length($message) . ' bytes)');
    like($message, qr/\.\.\. \(\d+ bytes cut\)$/, "big error <$sql>: says how many bytes were cut");
    cmp_ok(length($err), '<', 20000, "big error <$sql>: the whole report is small (" . length($err) . ' bytes)');
    my $copy = $err;
    ok(utf8::decode($copy) && $err !~ /\xff/, "big error <$sql>: valid UTF-8 for the client");
    my $log = slurp_file($node->logfile, $log_offset);
    my $copy_log = $log;
    ok(utf8::decode($copy_log) && $log !~ /\xff/, "big error <$sql>: valid UTF-8 in the log");
    cmp_ok(length($log), '<', 40000, "big error <$sql>: the log stays small (" . length($log) . ' bytes)');
}
my $log_offset = -s $node->logfile;
($err, $secs) = timed('SELECT * FROM badbyte_t WHERE id = 1', '20s');
like($err, qr/ERROR:  remote failure: bad \x{ef}\x{bf}\x{bd} byte\n/,
    'an invalid byte in the message: replaced by U+FFFD');
like($err, qr/DETAIL:  the detail: \x{ef}\x{bf}\x{bd}\x{ef}\x{bf}\x{bd}\n/,
    'an overlong sequence in the detail: each byte replaced');
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/remote failure: bad \x{ef}\x{bf}\x{bd} byte/, 'the log has the repaired text');
unlike($log, qr/[\xff\xc0]/, 'and no invalid byte');
backend_usable('after a big error');

is(scalar(grep { ($_->{event} // '') eq 'cancel_request' } @{ logged() }), 0,
    'no cancel request was ever sent (the instance gave no cancel key)');

# Each statement that hit its statement_timeout ended within 100 ms of it (the server's clock).
my ($worst) = sort { $b <=> $a } @overruns;
diag(sprintf('%d statements timed out; past their timeout by %s ms', scalar(@overruns),
             join(', ', map { sprintf('%.0f', $_ * 1000) } @overruns)));
ok(@overruns >= 7 && $worst < 0.1,
   sprintf('every timed-out statement ended within its timeout plus 100 ms (worst +%.0f ms)', $worst * 1000));

# ---- the worker, polling an instance that never answers ------------------------------------------
# Its waits end on its own exit: pg_terminate_backend and a fast shutdown take effect at once.
$node->stop;
my $silent = start_fake_instance('--default', 'silent');
my $poller = start_picoroute_node(
    name => 'silent_catalog',
    conninfo => "host=127.0.0.1 port=$silent->{port} dbname=picodata user=picoroute password=picoroute",
    refresh_interval => '200ms');
my $worker = '';
for (1 .. 100) {
    $worker = $poller->safe_psql('postgres', 'SELECT worker_pid FROM picoroute_status');
    last if $worker ne '' && grep { ($_->{event} // '') =~ /^(query|parse)$/ } @{ fake_log($silent) };
    Time::HiRes::sleep(0.1);
}
ok(scalar(grep { ($_->{event} // '') =~ /^(query|parse)$/ } @{ fake_log($silent) }) > 0,
    'the worker is waiting on its catalog query');
my $t0 = time();
$poller->safe_psql('postgres', "SELECT pg_terminate_backend($worker)");
my $gone = 0;
for (1 .. 100) {
    my $now = $poller->safe_psql('postgres', 'SELECT worker_pid FROM picoroute_status');
    if ($now ne $worker) { $gone = 1; last; }
    Time::HiRes::sleep(0.05);
}
$secs = time() - $t0;
ok($gone && $secs < 3, "pg_terminate_backend of the waiting worker takes effect at once (${secs}s)");
$t0 = time();
$poller->stop('fast');
$secs = time() - $t0;
ok($secs < 10, "a fast shutdown with the worker waiting takes a moment (${secs}s)");
done_testing();
