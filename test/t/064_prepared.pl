# Prepared remote statements: a cached connection prepares a statement text once and runs it with
# the key as its parameter (no bucket filter), so one named statement serves every key; the per-connection LRU
# (picoroute.remote_statement_cache_size) bounds them and closes what it evicts; after DDL the
# instance reports the statement invalidated (42999) and picoroute prepares it again. The emulator's
# front rules behind it (42999 at Bind, DEALLOCATE, pg_statement_max) are probed with raw messages.
# A connection whose Parse is refused because the instance's statement storage (pg_statement_max,
# shared by every client) is full gives its statements back and goes unnamed: its statement runs,
# and another role's statements keep working. remote_statement_cache_size is superuser-only.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_json emu_audit emu_audit_clear start_emulator
  start_picoroute_node wait_for exec_options picodata_version picodata_has);

my $dir = start_emulator(replicasets => 2, replication_factor => 1);
emu('create-table', 'users', '--columns', 'id int8, name text, v int8');
emu('load', 'users', '--rows', '200');
my $version = picodata_version();
# Named statements only where the instance reports invalidated ones (capability stmt_invalidation:
# 26.1.1 and later), with the startup options sent (execution_options 'on').
my $has_inv = picodata_has('stmt_invalidation');
my $named = $has_inv && exec_options() =~ /'on'/;
note("emulated $version: named statements expected: " . ($named ? 'yes' : 'no'));

my $node = start_picoroute_node(name => 'prepared');
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 20), 'map loaded');
my $xo = exec_options();
$node->safe_psql('postgres', qq{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname 'picodata', picodata_version '$version', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico OPTIONS (sharding_key 'id');
});

my @logs = map { "$dir/$_->{name}/front.log" } @{ emu_json('status', '--json')->{instances} };
my %offset = map { $_ => (-s $_ // 0) } @logs;
# The fronts' log lines written since the last call.
sub new_log_lines {
    my @lines;
    for my $log (@logs) {
        open(my $fh, '<', $log) or next;
        seek($fh, $offset{$log}, 0);
        push @lines, <$fh>;
        $offset{$log} = tell($fh);
        close($fh);
    }
    return @lines;
}
sub count_lines { my ($re, @lines) = @_; return scalar(grep { /$re/ } @lines); }
my $prepared_re = qr/named statement picoroute_\d+ prepared/;

# 1. One text for every bucket: 40 keys over many buckets, prepared once per instance.
my $bg = $node->background_psql('postgres');
$bg->query_safe(q{SET plan_cache_mode = force_generic_plan;
PREPARE p(bigint) AS SELECT id, name FROM users WHERE id = $1;
PREPARE u(bigint) AS UPDATE users SET v = v + 0 WHERE id = $1});
my $got = '';
$got .= $bg->query_safe("EXECUTE p($_)") . "\n" for 1 .. 40;
is($got, join('', map { "$_|name_$_\n" } 1 .. 40), '40 routed point SELECTs return their rows');
my $buckets = $node->safe_psql('postgres',
    q{SELECT count(DISTINCT picoroute_bucket_id('default', i::bigint)) FROM generate_series(1, 40) i});
cmp_ok($buckets, '>', 30, "the keys lie in $buckets different buckets");
my @lines = new_log_lines();
my $prepares = count_lines($prepared_re, @lines);
if ($named) {
    ok($prepares >= 1 && $prepares <= 2,
       "one named statement per instance served them all ($prepares Parse of a named statement for 40 executions)");
} else {
    is($prepares, 0, 'no named statement where the instance does not report invalidation');
}
my $explain = $node->safe_psql('postgres',
    'EXPLAIN (VERBOSE, COSTS OFF) SELECT id, name FROM users WHERE id = 7');
like($explain, qr/Remote SQL: SELECT "id", "name" FROM "users" WHERE \("id" = 7\)(?! AND)[^\n]*\n\s+Routing: bucket \d+ -> /,
     'EXPLAIN VERBOSE shows the remote SQL without a bucket filter, and where it goes');

# 2. Invalidation: DDL between two executions of the same prepared statements (a streamed scan and
# a routed UPDATE) in one session.
$bg->query_safe('EXECUTE u(3)') for 1 .. 2;
new_log_lines();
emu('create-table', 'ddl_probe', '--columns', 'id int8');
select(undef, undef, undef, 0.3);    # the fronts look at the catalog at most every 0.1 s
is($bg->query_safe('EXECUTE p(3)'), '3|name_3', 'the prepared SELECT runs after DDL');
is($bg->query_safe('EXECUTE u(3)'), '', 'the prepared UPDATE runs after DDL');
@lines = new_log_lines();
if ($named) {
    is(count_lines(qr/invalidated by DDL/, @lines), 2, 'both statements were reported invalidated (42999)');
    is(count_lines($prepared_re, @lines), 2, 'and prepared again, once each');
    is(count_lines(qr/named statement picoroute_\d+ deallocated/, @lines), 2, 'the stale ones were closed');
} else {
    is(count_lines(qr/invalidated by DDL/, @lines), 0, 'no invalidation without named statements');
}
$bg->quit;

# 3. The LRU: 2 texts per connection; 4 shapes, each run 3 times.
my @shapes = map { "SELECT $_ FROM users WHERE id = 11" } ('id', 'name', 'v', 'id, v');
my $script = "SET picoroute.remote_statement_cache_size = 2;\n"
  . join('', map { my $s = $_; join('', map { "$s;\n" } 1 .. 3) } @shapes);
$node->safe_psql('postgres', $script);
@lines = new_log_lines();
my @counts = map { /\((\d+) named in this session\)/ ? $1 : () } grep { /$prepared_re/ } @lines;
my $max = (sort { $b <=> $a } (0, @counts))[0];
if ($named) {
    is(scalar(@counts), 4, 'each of the 4 shapes was prepared once (on its second run)');
    ok($max <= 2, "never more than 2 named statements on the connection (at most $max)");
    is(count_lines(qr/named statement picoroute_\d+ deallocated/, @lines), 2,
       'the evicted statements were closed (DEALLOCATE)');
} else {
    is(scalar(@counts), 0, 'no named statement');
}
$node->safe_psql('postgres', "SET picoroute.remote_statement_cache_size = 0;\n"
    . join('', map { "SELECT name FROM users WHERE id = 12;\n" } 1 .. 3));
is(count_lines($prepared_re, new_log_lines()), 0, 'remote_statement_cache_size 0: every statement unnamed');

# 4. The front's rules, with raw protocol messages.
my $status = emu_json('status', '--json');
my ($inst) = grep { $_->{running} } @{ $status->{instances} };
my $probe_out = `python3 $FindBin::RealBin/../emulator/stmt_probe.py --picoemu $FindBin::RealBin/../emulator/picoemu --dir $dir --port $inst->{port} --user admin --password admin --table users`;
my $probe = decode_json($probe_out);
for my $key (qw(asked direct plain)) {
    is_deeply($probe->{"${key}_before"}, { rows => [ ['1'] ] }, "probe ($key): the named statement runs");
}
if ($has_inv) {
    is_deeply($probe->{asked_after}, { error => '42999', message => 'prepared statement probe_1 has been invalidated' },
              'after DDL: 42999 at Bind for a session with pico_stmt_invalidation=true in its options');
    is_deeply($probe->{direct_after}, $probe->{asked_after}, 'the same with it as a startup parameter');
} else {
    is_deeply($probe->{asked_after}, { rows => [ ['1'] ] }, 'without the capability the option is ignored');
}
is_deeply($probe->{plain_after}, { rows => [ ['1'] ] }, 'a session that did not ask runs the statement');
is_deeply($probe->{asked_rerun}, { rows => [ ['1'] ] }, 'closed and prepared again, it runs');
ok(!exists $probe->{prepare_after_deallocate}{error}, 'DEALLOCATE freed the name');
my $full = 'Statement storage is full. Current size limit: 3. Please, increase storage limit using: '
  . 'ALTER SYSTEM SET "pg_statement_max" TO <new-limit>';
ok(!exists $probe->{statement_max}[0]{error}, 'pg_statement_max 3: the first Parse is accepted');
is_deeply($probe->{statement_max}[3], { error => 'XX000', message => $full },
          'the Parse past pg_statement_max fails with Picodata\'s text');
# The probe's refusals (and possibly the topology worker's statements while the limit was 3).
my @other = grep { $_->{message} ne $full } @{ emu_audit() };
is(scalar(@other), 0, 'the fronts refused nothing else') or diag(explain(\@other));
emu_audit_clear();

# 5. Statement storage full. Only a superuser sets the cache size.
$node->safe_psql('postgres', q{
CREATE ROLE other LOGIN;
GRANT SELECT ON users TO other;
CREATE USER MAPPING FOR other SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
});
my ($ret, $out, $err) = $node->psql('postgres', 'SET picoroute.remote_statement_cache_size = 10',
    extra_params => [ '-U', 'other' ]);
like($err, qr/permission denied to set parameter "picoroute.remote_statement_cache_size"/,
     'a role that is not superuser cannot set remote_statement_cache_size');
is($node->safe_psql('postgres', 'SHOW picoroute.remote_statement_cache_size'), '32', 'its default is 32');
if ($named) {
    emu('set', 'pg_statement_max', '8');
    select(undef, undef, undef, 0.3);    # the fronts read the settings at most every 0.1 s
    my $errors_sql = 'SELECT sum(refused_errors + remote_errors + unknown_outcome_errors) FROM picoroute_stat_instances';
    my $errors_before = $node->safe_psql('postgres', $errors_sql);
    my $filler = $node->background_psql('postgres');
    # 12 texts, each run twice (prepared at its second run), all on the instance that owns id 11:
    # past 8 statements of the instance's clients together the storage is full.
    my @texts = map { "SELECT name FROM users WHERE id = 11 AND id <> " . (1000 + $_) } 1 .. 12;
    my $all = '';
    for my $text (@texts) {
        $all .= $filler->query_safe($text) . "\n" for 1 .. 2;
    }
    is($all, "name_11\n" x 24, 'every statement of the session that filled the storage ran');
    @lines = new_log_lines();
    my $prepares = count_lines($prepared_re, @lines);
    my $closed = count_lines(qr/named statement picoroute_\d+ deallocated/, @lines);
    ok($prepares >= 1 && $prepares < 8, "it prepared statements until the storage was full ($prepares)");
    is($closed, $prepares, 'then closed every one of them');
    my $refused = grep { $_->{message} =~ /Statement storage is full/ } @{ emu_audit() };
    is($refused, 1, 'one Parse was refused for lack of storage');
    is($node->safe_psql('postgres', $errors_sql), $errors_before,
       'the refused Parse, answered by sending the statement again, is no error in picoroute_stat_instances');
    like(slurp_file($node->logfile), qr/statement storage of Picodata instance .* is full; this connection closes its prepared statements/,
         'the server log says the connection went unnamed');
    # The session is still open: another role's statements, repeated, find room.
    my $other = '';
    $other .= $node->safe_psql('postgres', join('', map { "SELECT name FROM users WHERE id = 11;\n" } 1 .. 3),
        extra_params => [ '-U', 'other' ]) . "\n";
    is($other, "name_11\nname_11\nname_11\n", "another role's statements keep working");
    is($filler->query_safe($texts[0]), 'name_11', 'and the session that filled it goes on, unnamed');
    is(count_lines($prepared_re, new_log_lines()), 1, 'only the other role prepared a statement since');
    $filler->quit;
    emu('set', 'pg_statement_max', '100000');
    emu_audit_clear();
}

done_testing();
