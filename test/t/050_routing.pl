# Routing against the emulator: point statements reach the owner (strict mode + counters), scatter
# in both modes, multi-column and NULL keys, EXPLAIN, remote errors, IMPORT FOREIGN SCHEMA,
# read_preference replica, picoroute_exec / picoroute_exec_all and the connection cache.
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
  qw(emu emu_command emu_json emu_private_psql emu_table start_emulator start_routing_node create_servers
  create_foreign_tables picodata_version picodata_has emu_counters counters_moved);

start_emulator();

emu_table('users', 'id int8, name text, v int8', rows => 200);
emu_table('pairs', 'a text, b int8, note text', args => [ '--primary-key', 'a,b' ]);
emu('insert', 'pairs', '--values', q{["lol", 5, "five"]}, '--values', q{["kek", 7, "seven"]});
emu_table('nk', 'id int8, k text, v int8', args => [ '--primary-key', 'id', '--sharding-key', 'k' ]);
emu('insert', 'nk', '--values', q{[1, null, 10]}, '--values', q{[2, "a", 20]});
emu_table('settings', 'name text, value text', args => ['--global']);
emu('insert', 'settings', '--values', q{["mode", "test"]});

my $status = emu_json('status', '--json');
my %port_of = map { $_->{name} => $_->{port} } @{ $status->{instances} };
my @masters = sort map { $_->{master} } @{ $status->{replicasets} };

my $node = start_routing_node(name => 'routing', admin => 1, refresh_interval => '300ms');
create_servers($node, qw(pico pico_m pico_r));
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', qw(pico pico_m pico_r));
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE pairs (a text, b bigint, note text) SERVER pico OPTIONS (sharding_key 'a, b');
CREATE FOREIGN TABLE nk (id bigint, k text, v bigint) SERVER pico OPTIONS (sharding_key 'k');
CREATE FOREIGN TABLE settings (name text, value text) SERVER pico OPTIONS (distribution 'global');
});

# ---- counters: which instances a statement touched -------------------------------------------
# Runs $sql and returns the instances whose counters for $table moved (waits for the statistics).
sub run_and_touched {
    my ($table, $sql) = @_;
    my $before = emu_counters($table);
    my $result = $node->safe_psql('postgres', $sql);
    my $t = [];
    for (1 .. 40) {
        sleep 0.1;
        $t = counters_moved($before, emu_counters($table));
        last if @$t;
    }
    sleep 1.2;    # let any other instance publish its statistics too
    $t = counters_moved($before, emu_counters($table));
    return ($result, $t);
}
sub owner_of {
    my ($table, $key) = @_;
    return emu_json('locate', $table, '--key', $key)->{master};
}

# ---- strict mode: every point statement reaches the owner -----------------------------------
# Strict mode (forward=off) exists from 26.2.1-rc1 (capability forward). Every version routes a statement by its
# sharding-key predicate (id = 5): a read by key costs its owner only. picoroute sends a statement
# that fixes the key to the owner without any bucket_id term, so a statement Picodata cannot route
# by its key (k IS NULL) is served by the owner for the whole cluster: every master is asked. Writes
# by key go to the owner.
my $strict = picodata_has('forward');
my $prune = picodata_has('prune_by_bucket_id');
my $v = picodata_version();
emu('strict', 'on') if $strict;
my $mode = $strict ? 'strict' : "$v";
# The instances a read at the owner costs: by key; by a key Picodata does not route (IS NULL).
sub read_cost { my ($owner) = @_; return [$owner]; }
sub filter_cost { my ($owner) = @_; return [@masters]; }
# The addresses $sql is sent to: a new session runs it twice (the first run may also read the
# catalog, e.g. to check the declaration) and reports the connections whose statement count the
# second run raised (picoroute_connections()).
sub sent_to {
    my ($sql) = @_;
    my $snap = "SELECT '%s:' || coalesce(string_agg(address || '=' || statements, ',' ORDER BY address), '') "
      . "FROM picoroute_connections()";
    my @lines = split /\n/, $node->safe_psql('postgres',
        "$sql; " . sprintf($snap, 'A') . "; $sql; " . sprintf($snap, 'B'));
    my %count;
    for my $line (grep { /^[AB]:/ } @lines) {
        my ($tag, $list) = $line =~ /^([AB]):(.*)$/;
        for (split /,/, $list) { my ($a, $n) = /^(.*)=(\d+)$/; $count{$tag}{$a} = $n; }
    }
    return join(',', sort grep { ($count{B}{$_} // 0) > ($count{A}{$_} // 0) } keys %{ $count{B} // {} });
}
for my $id (5, 123) {
    my $owner = owner_of('users', "[$id]");
    is(sent_to("SELECT name FROM users WHERE id = $id"), "127.0.0.1:$port_of{$owner}",
       "point SELECT id=$id is sent to the master of its owner $owner");
    my ($r, $t) = run_and_touched('users', "SELECT name FROM users WHERE id = $id");
    is($r, "name_$id", "$mode: point SELECT id=$id");
    is_deeply($t, read_cost($owner), "$mode: SELECT id=$id touched " . join(',', @{ read_cost($owner) }));
}
for my $id (1001, 1002) {
    my $owner = owner_of('users', "[$id]");
    my ($r, $t) = run_and_touched('users', "INSERT INTO users VALUES ($id, 'new', 1)");
    is_deeply($t, [$owner], "$mode: INSERT id=$id touched only $owner");
    is(sent_to("UPDATE users SET v = v WHERE id = $id"), "127.0.0.1:$port_of{$owner}",
       "UPDATE id=$id is sent to the master of its owner $owner");
    ($r, $t) = run_and_touched('users', "UPDATE users SET v = v + 1 WHERE id = $id");
    is_deeply($t, read_cost($owner), "$mode: UPDATE id=$id touched " . join(',', @{ read_cost($owner) }));
    is($node->safe_psql('postgres', "SELECT v FROM users WHERE id = $id"), '2', "UPDATE applied");
    ($r, $t) = run_and_touched('users', "DELETE FROM users WHERE id = $id");
    is_deeply($t, read_cost($owner), "$mode: DELETE id=$id touched " . join(',', @{ read_cost($owner) }));
    is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE id = $id"), '0', "DELETE applied");
}
# A multi-row INSERT whose rows belong to both replicasets, in one batch.
$node->safe_psql('postgres', "INSERT INTO users SELECT g, 'batch', 0 FROM generate_series(2001, 2040) g");
$node->safe_psql('postgres', "DELETE FROM users WHERE id >= 2001 AND id <= 2040 AND name = 'batch'")
  if 0;    # a scatter DELETE needs non-strict mode; done below

# Multi-column and NULL keys.
my $pair_owner = owner_of('pairs', '["lol", 5]');
my ($pr, $pt) = run_and_touched('pairs', "SELECT note FROM pairs WHERE a = 'lol' AND b = 5");
is($pr, 'five', 'strict: two-column key SELECT');
is_deeply($pt, read_cost($pair_owner), "$mode: two-column key read cost " . join(',', @{ read_cost($pair_owner) }));
like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) SELECT * FROM pairs WHERE a = 'lol' AND b = 5"),
     qr/Routing: bucket 442 -> 127\.0\.0\.1:$port_of{$pair_owner} \(master \S+ of replicaset /,
     'EXPLAIN shows bucket 442 (the documented hash of (lol, 5)) and its master');
my $null_owner = owner_of('nk', '[null]');
# Picodata does not route by "k IS NULL": the owner serves it for the whole cluster, which
# forward=off refuses; it runs without strict mode.
emu('strict', 'off') if $strict;
my ($nr, $nt) = run_and_touched('nk', "SELECT id, v FROM nk WHERE k IS NULL");
is($nr, '1|10', 'NULL key SELECT');
is_deeply($nt, filter_cost($null_owner), "$mode: NULL key read (no bucket filter, not routed by Picodata) cost "
          . join(',', @{ filter_cost($null_owner) }));
$node->safe_psql('postgres', "INSERT INTO nk VALUES (3, NULL, 30)");
is($node->safe_psql('postgres', "SELECT count(*) FROM nk WHERE k IS NULL"), '2', 'INSERT with a NULL key');
emu('strict', 'on') if $strict;

# Prepared statement: the bucket comes from the parameter at execution.
is($node->safe_psql('postgres', q{
SET plan_cache_mode = force_generic_plan;
PREPARE p(bigint) AS SELECT name FROM users WHERE id = $1;
EXECUTE p(7); EXECUTE p(150); EXECUTE p(42);
}), "name_7\nname_150\nname_42", 'strict: generic prepared statement routed per execution');

# Remote errors keep Picodata's message and get PostgreSQL's SQLSTATE where picoroute knows the text
# (Picodata sends XX000 for all but a few protocol cases: core/routing/sqlstate_map.h), and name the instance.
my ($ret, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
CREATE FOREIGN TABLE missing (id bigint) SERVER pico OPTIONS (table_name 'no_such_table', sharding_key 'id');
SELECT * FROM missing WHERE id = 5});
like($err, qr/ERROR:  42P01: sbroad: table with name "no_such_table" not found/,
     'a missing table: Picodata\'s message, PostgreSQL\'s SQLSTATE 42P01');
like($err, qr/remote SQL on Picodata instance 127\.0\.0\.1:\d+ \(replicaset [0-9a-f-]+\): SELECT "id" FROM "no_such_table" WHERE \("id" = 5\)(?! AND)/,
     'remote error names the instance, replicaset and remote SQL (no bucket filter)');
($ret, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SELECT * FROM picoroute_exec('default', 1, 'SELECT 1/0') AS t(x int)});
like($err, qr/ERROR:  22012: sbroad: Failed to execute SQL statement: division by zero/,
     'picoroute_exec: Picodata\'s division by zero is 22012');
my $scan_started = Time::HiRes::time();
($ret, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SELECT count(*) FROM users});
my $scan_took = Time::HiRes::time() - $scan_started;
if ($strict) {
    like($err, qr/ERROR:  XX000: sbroad: invalid option: cannot satisfy "forward = off": buckets span multiple nodes/,
         'strict: a coordinator scan is refused (forward=off), SQLSTATE kept');
    # No instance accepts it under forward=off: it is not sent again for picoroute.failover_wait.
    cmp_ok($scan_took, '<', 5, "strict: the refusal comes at once, not after retries ($scan_took s)");
}
else {
    is($ret, 0, "$v has no forward=off: a coordinator scan is served") or diag($err);
}
($ret, $out, $err) = $node->psql('postgres', "UPDATE users SET id = 9 WHERE id = 5");
like($err, qr/cannot update sharding key column "id"/, 'UPDATE of a sharding key column refused');

# ---- scatter in both modes ---------------------------------------------------------------------
emu('strict', 'off') if $strict;
# A key list of both owners goes once to one of them, which routes it by the key (forward=off would
# refuse it); a key fixed only by a local clause (a subquery's array) is not routed.
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE id = ANY(ARRAY(SELECT generate_series(2001, 2040)::bigint))"),
   '40', 'batch INSERT (strict) stored every row at its owner');
is($node->safe_psql('postgres', "SELECT count(*), sum(id) FROM users WHERE id IN (2001, 2002, 2003, 2004, 2005)"),
   '5|10015', 'IN list of both owners: sent once, every row once');
like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) SELECT * FROM users WHERE id IN (2001, 2002, 2003, 2004, 2005)"),
     qr/Remote SQL: SELECT [^\n]* IN \(2001, 2002, 2003, 2004, 2005\)\)(?! AND)[^\n]*\n\s+Routing: [^\n]*: sent once to 127\.0\.0\.1:\d+, which routes it by the key/,
     'EXPLAIN: the key list without a bucket filter, sent once');
# What the emulator stores, read from every master's storage on its private port (PostgreSQL-only SQL
# that no Picodata front accepts).
sub stored {
    my ($sql) = @_;
    my ($count, $sum) = (0, 0);
    for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
        my ($c, $s) = split /\|/, emu_private_psql($rs->{master}, $sql);
        $count += $c;
        $sum += $s // 0;
    }
    return ($count, $sum);
}
my $expected = join('|', stored('SELECT count(*), coalesce(sum(id), 0) FROM _picoemu_local.users'));
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM users'), $expected,
   'scatter coordinator returns exactly the emulator rows');
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM users_m'), $expected,
   'scatter masters returns exactly the emulator rows');
like($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT * FROM users_m'),
     qr/Routing: scatter to the 2 masters of tier "default": 127\.0\.0\.1:\d+ \(buckets 1-1500 in 3 statements\), 127\.0\.0\.1:\d+ \(buckets 1501-3000 in 3 statements\)/,
     'EXPLAIN of a masters scatter whose bucket lists exceed the chain limit: 3 statements per master');
like($node->safe_psql('postgres', q{EXPLAIN (COSTS OFF) SELECT name FROM users WHERE v > 10 AND name LIKE 'name_1%'}),
     qr/Remote SQL: SELECT "name" FROM "users" WHERE \("v" > 10\) AND \("name" LIKE 'name_1%'\)(?: OPTION \([^)]*\))?\n\s+Routing: scatter through coordinator/,
     'EXPLAIN pushes WHERE clauses down and shows the coordinator');
is($node->safe_psql('postgres', q{SELECT count(*) FROM users WHERE v > 10 AND name LIKE 'name_1%' AND id % 2 = 0}),
   (stored(q{SELECT count(*), 0 FROM _picoemu_local.users WHERE v > 10 AND name LIKE 'name_1%' AND id % 2 = 0}))[0],
   'pushed-down and local filters together');
is($node->safe_psql('postgres', "DELETE FROM users_m WHERE name = 'batch'"), '', 'scatter DELETE over masters');
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE name = 'batch'"), '0', 'scatter DELETE removed every row');
is($node->safe_psql('postgres', 'SELECT value FROM settings'), 'test', 'global table read through a coordinator');

# ---- read_preference replica -----------------------------------------------------------------
# picoroute sends the read to a replica of the owner. Whether that replica serves it depends on the
# version: 25.5 replicas never serve reads (the replica hands the read to its master); from 26.1 a
# replica serves it only when the session carries read_preference = replica/any (else it hands it
# to its master).
{
    my $owner = owner_of('users', '[9]');
    my ($rs) = $owner =~ /^(.*)_\d+$/;
    my %replica_port = map { ("127.0.0.1:$port_of{$_}" => $_) } grep { /^\Q$rs\E_/ && $_ ne $owner } keys %port_of;
    my $sent = sent_to('SELECT name FROM users_r WHERE id = 9');
    ok($replica_port{$sent}, "read_preference replica: the read is sent to a replica of $rs (got $sent)");
    my ($r, $t) = run_and_touched('users', 'SELECT name FROM users_r WHERE id = 9');
    is($r, 'name_9', 'read_preference replica: row read');
    if (picodata_has('read_preference')) {
        is(scalar(@$t), 1, 'read_preference replica: one instance touched');
        ok(@$t && $t->[0] ne $owner && $t->[0] =~ /^\Q$rs\E_/,
           "read_preference replica: served by a replica of $rs (got @$t)");
    }
    else {
        is_deeply($t, read_cost($owner), "$v: replicas never serve reads: the read costs "
              . join(',', @{ read_cost($owner) }));
    }
    # Where picoroute_exec sends a statement (pg_is_in_recovery() is not Picodata SQL, so the tests look
    # at picoroute's connections instead).
    my $b9 = emu_json('locate', 'users', '--key', '[9]')->{bucket_id};
    my $exec9 = "SELECT name FROM picoroute_exec('default', $b9, 'SELECT name FROM users WHERE id = 9 AND bucket_id = $b9'%s) AS t(name text)";
    is($node->safe_psql('postgres', sprintf($exec9, ', true')), 'name_9', 'picoroute_exec read_only: row read');
    my $sent_ro = sent_to(sprintf($exec9, ', true'));
    ok($replica_port{$sent_ro}, "picoroute_exec read_only is sent to a replica of $rs (got $sent_ro)");
    is(sent_to(sprintf($exec9, '')), "127.0.0.1:$port_of{$owner}", 'picoroute_exec runs on the master by default');
}

# ---- picoroute_exec, picoroute_exec_all, the connection cache --------------------------------
is($node->safe_psql('postgres',
    q{SELECT name FROM picoroute_exec('default', picoroute_bucket_id('default', 5::bigint),
      'SELECT name FROM users WHERE id = 5') AS t(name text)}), 'name_5', 'picoroute_exec');
is($node->safe_psql('postgres',
    q{SELECT count(*) FROM picoroute_exec_all('default', 'SELECT 1') AS t(x int)}), '2',
   'picoroute_exec_all reaches every master');
($ret, $out, $err) = $node->psql('postgres',
    q{SELECT * FROM picoroute_exec('default', 1, 'SELECT 1, 2') AS t(x int)});
like($err, qr/returned 2 columns but the column definition list has 1/, 'column count mismatch');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM users WHERE id = 1;
SELECT count(*) FROM users WHERE id = 2;
SELECT count(*) FROM users WHERE id = 3;
SELECT count(DISTINCT address) = count(*), bool_and(state = 'idle'), sum(statements) >= 3
  FROM picoroute_connections() WHERE server_name = 'pico';
}), "1\n1\n1\nt|t|t", 'connections are reused across statements');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM users WHERE id = 1;
SELECT picoroute_disconnect_all() > 0;
SELECT count(*) FROM picoroute_connections();
}), "1\nt\n0", 'picoroute_disconnect_all closes the cache');
($ret, $out, $err) = $node->psql('postgres', q{
CREATE ROLE alice LOGIN;
GRANT USAGE ON FOREIGN SERVER pico TO alice;
CREATE USER MAPPING FOR alice SERVER pico OPTIONS (user 'picoroute');
GRANT SELECT ON users TO alice;
SET ROLE alice;
SELECT * FROM users WHERE id = 1;});
like($err, qr/password is required/, 'a non-superuser needs a password in the user mapping');
($ret, $out, $err) = $node->psql('postgres', q{SET ROLE alice; SELECT * FROM picoroute_exec('default', 1, 'SELECT 1') AS t(x int)});
like($err, qr/permission denied for function picoroute_exec/, 'picoroute_exec is not granted to PUBLIC');

# ---- IMPORT FOREIGN SCHEMA ----------------------------------------------------------------------
$node->safe_psql('postgres', 'CREATE SCHEMA imp; IMPORT FOREIGN SCHEMA picodata FROM SERVER pico INTO imp');
is($node->safe_psql('postgres', q{
SELECT c.relname, array_to_string(ftoptions, ' ')
  FROM pg_foreign_table f JOIN pg_class c ON c.oid = f.ftrelid
 WHERE c.relnamespace = 'imp'::regnamespace ORDER BY 1}),
   "nk|table_name=nk distribution=sharded sharding_key=k\n"
 . "pairs|table_name=pairs distribution=sharded sharding_key=a, b\n"
 . "settings|table_name=settings distribution=global\n"
 . "users|table_name=users distribution=sharded sharding_key=id",
   'IMPORT FOREIGN SCHEMA: tables, distribution and sharding keys');
is($node->safe_psql('postgres', q{
SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY attnum)
  FROM pg_attribute WHERE attrelid = 'imp.pairs'::regclass AND attnum > 0}),
   'a text not null, b bigint not null, note text', 'IMPORT FOREIGN SCHEMA: columns and types');
is($node->safe_psql('postgres', "SELECT note FROM imp.pairs WHERE a = 'kek' AND b = 7"), 'seven',
   'an imported table is routed by its key');

$node->stop;
done_testing();
