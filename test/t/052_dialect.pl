# Picodata's dialect against the emulator: the rewritten shapes return the right rows (NOT LIKE,
# unary minus, keyword-named columns), double and numeric(p,s) sharding keys find their rows,
# large keyless reads and a 6000-row INSERT ... SELECT, values independent of the session's
# DateStyle and extra_float_digits, keyless statements spread over the masters, a masters scatter
# that never doubles rows while a new replicaset owns no bucket and during the rebalance after,
# and declarations checked against _pico_table.
# Runs on every emulated version: double keys hash by the version's rule (integral doubles as integers from 26.1).
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
  create_foreign_tables wait_for);

start_emulator(tiers => [ 'default:2:1:900', 'other:1:1:300' ]);

emu_table('users', 'id int8, name text, v int8', rows => 20000);
emu_table('kw', 'option int8, set text, by int8, begin text, filter int8, over text',
          args => [ '--primary-key', 'option' ]);
emu('insert', 'kw', '--values', q{[1, "one", 10, "b1", 100, "o1"]},
    '--values', q{[2, "two", 20, "b2", null, "o2"]});
emu_table('fl', 'f float8, v text');
emu('insert', 'fl', '--values', q{[1.5, "one and a half"]}, '--values', q{[2.0, "two"]});
emu_table('nm', 'n numeric(10,2), v text');
emu('insert', 'nm', '--values', q{["1.00", "one"]}, '--values', q{["2.50", "two and a half"]});
emu_table('vals', 'id int8, ts timestamptz, d float8, x numeric');
emu_table('ot', 'id int8, v text', args => [ '--tier', 'other' ]);

my $node = start_routing_node(name => 'dialect', admin => 1, refresh_interval => '300ms');
create_servers($node, qw(pico pico_m pico_on));
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', qw(pico pico_m pico_on));
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE kw ("option" bigint, "set" text, "by" bigint, "begin" text, "filter" bigint,
                         "over" text) SERVER pico OPTIONS (sharding_key 'option');
CREATE FOREIGN TABLE fl (f float8, v text) SERVER pico OPTIONS (sharding_key 'f');
CREATE FOREIGN TABLE nm (n numeric(10,2), v text) SERVER pico OPTIONS (sharding_key 'n');
CREATE FOREIGN TABLE vals (id bigint, ts timestamptz, d float8, x numeric) SERVER pico
  OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE big (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'id', batch_size '10000');
});

# The rows as the storages hold them, read around picoroute: on every master's private port (the
# Picodata fronts refuse the storage schema).
sub storage_count {
    my ($where) = @_;
    my $n = 0;
    $n += emu_private_psql($_->{master}, "SELECT count(*) FROM _picoemu_local.users WHERE $where")
      for @{ emu_json('status', '--json')->{replicasets} };
    return "$n";
}

# ---- rewritten shapes return the right rows -----------------------------------------------------
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE name NOT LIKE 'name_1%'"),
   storage_count("name NOT LIKE 'name_1%'"), 'NOT LIKE (sent as NOT (a LIKE b)) returns the right rows');
like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) SELECT count(*) FROM users WHERE name NOT LIKE 'name_1%'"),
     qr/WHERE \(NOT \("name" LIKE 'name_1%'\)\)/, 'NOT LIKE is sent as NOT (a LIKE b)');
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE -v < -500"),
   storage_count('-v < -500'), 'unary minus (sent as 0 - v) returns the right rows');
like($node->safe_psql('postgres', "EXPLAIN (COSTS OFF) SELECT count(*) FROM users WHERE -v < -500"),
     qr/WHERE \(\(0 - "v"\) < \(-500\)\)/, 'unary minus is sent as (0 - v)');
is($node->safe_psql('postgres',
    q{SELECT "option", "set", "by", "begin", "filter", "over" FROM kw WHERE "option" = 1}),
   '1|one|10|b1|100|o1', 'keyword-named columns: point read');
is($node->safe_psql('postgres',
    q{SELECT string_agg("set", ',' ORDER BY "option") FROM kw WHERE "by" >= 10 AND "filter" IS NULL}),
   'two', 'keyword-named columns: scatter with conditions on them');
$node->safe_psql('postgres', q{INSERT INTO kw VALUES (3, 'three', 30, 'b3', 300, 'o3')});
$node->safe_psql('postgres', q{UPDATE kw SET "over" = 'o3x', "by" = "by" + 1 WHERE "option" = 3});
is($node->safe_psql('postgres', q{SELECT "by", "over" FROM kw WHERE "option" = 3}), '31|o3x',
   'keyword-named columns: INSERT and UPDATE');

# ---- double and numeric(10,2) sharding keys -------------------------------------------------------
is($node->safe_psql('postgres', 'SELECT v FROM fl WHERE f = 1.5'), 'one and a half',
   'float8 key 1.5 finds its row');
is($node->safe_psql('postgres', 'SELECT v FROM fl WHERE f = 2'), 'two', 'float8 key 2 finds its row');
is($node->safe_psql('postgres', 'SELECT v FROM nm WHERE n = 1'), 'one', 'numeric(10,2) key 1 finds 1.00');
is($node->safe_psql('postgres', 'SELECT v FROM nm WHERE n = 2.5'), 'two and a half',
   'numeric(10,2) key 2.5 finds 2.50');
is($node->safe_psql('postgres', q{SELECT string_agg(v, ',' ORDER BY n) FROM nm WHERE n IN (1, 2.5)}),
   'one,two and a half', 'numeric(10,2) key IN (1, 2.5)');
is($node->safe_psql('postgres', q{
SET plan_cache_mode = force_generic_plan;
PREPARE p(numeric) AS SELECT v FROM nm WHERE n = $1;
EXECUTE p(1); EXECUTE p(2.5);
PREPARE q AS SELECT v FROM nm WHERE n = $1;
EXECUTE q(1);
}), "one\ntwo and a half\none", 'numeric(10,2) key: prepared EXECUTE p(1) finds 1.00');
is($node->safe_psql('postgres', 'SELECT count(*) FROM nm WHERE n = 1.005'), '0',
   'numeric(10,2) key with more digits than the column: no row');
$node->safe_psql('postgres', q{INSERT INTO nm VALUES (3, 'three'); INSERT INTO fl VALUES (0.1, 'tenth')});
is($node->safe_psql('postgres', q{SELECT v FROM nm WHERE n = 3.0}), 'three', 'numeric key inserted as 3 found as 3.0');
is($node->safe_psql('postgres', q{SELECT v FROM fl WHERE f = 0.1}), 'tenth', 'float8 key 0.1 round trip');

# ---- large keyless reads and a 6000-row INSERT ... SELECT ----------------------------------------
is($node->safe_psql('postgres', 'SELECT count(*) FROM users'), '20000', 'count(*) over 20,000 rows');
is($node->safe_psql('postgres', 'SELECT string_agg(v::text, \',\') FROM (SELECT v FROM users ORDER BY v DESC, id LIMIT 3) s'),
   '999,999,999', 'ORDER BY v DESC LIMIT 3 over 20,000 rows');
like($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*) FROM users_on'),
     qr/Remote SQL: SELECT count\(\*\) FROM "users" OPTION \(sql_motion_row_max = 4000, sql_vdbe_opcode_max = 0\)/,
     'a keyless read carries the bound picoroute.keyless_row_max and lifts the instruction limit (OPTION clause, where execution options are on)');
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO big SELECT g, \'x\', 0 FROM generate_series(1, 10) g'),
     qr/Batch Size: 5000/, 'batch_size 10000 is capped at the 5000-row limit');
$node->safe_psql('postgres', q{INSERT INTO big SELECT g, 'bulk', 1 FROM generate_series(100001, 106000) g});
is($node->safe_psql('postgres', q{SELECT count(*) FROM users WHERE name = 'bulk'}), '6000',
   '6000-row INSERT ... SELECT stored every row');
is(storage_count("name = 'bulk' AND id BETWEEN 100001 AND 106000"), '6000',
   '6000-row INSERT ... SELECT: every row in the storages');

# ---- values whatever the session's settings ------------------------------------------------------
$node->safe_psql('postgres', q{
SET DateStyle = 'SQL, DMY';
SET extra_float_digits = 0;
SET TimeZone = 'Asia/Kolkata';
INSERT INTO vals VALUES (1, '2025-02-01 10:00:00+00', 0.30000000000000004, 1.5);
PREPARE ins(bigint, timestamptz, float8) AS INSERT INTO vals (id, ts, d) VALUES ($1, $2, $3);
EXECUTE ins(2, '2025-02-01 10:00:00+00', 0.1::float8 + 0.2::float8);
});
is(join("\n", grep { $_ ne '' } map {
        emu_private_psql($_->{master},
            q{SELECT (ts AT TIME ZONE 'UTC')::text, d::text FROM _picoemu_local.vals WHERE id = 1})
    } @{ emu_json('status', '--json')->{replicasets} }),
   '2025-02-01 10:00:00|0.30000000000000004',
   "DateStyle 'SQL, DMY' and extra_float_digits 0: stored exactly what was inserted");
is($node->safe_psql('postgres', q{
SET DateStyle = 'SQL, DMY';
SELECT count(*) FROM vals WHERE ts = '2025-02-01 10:00:00+00' AND d = 0.1::float8 + 0.2::float8}), '2',
   'the stored values compare equal to what was inserted (prepared INSERT too)');
is($node->safe_psql('postgres', q{
SET DateStyle = 'SQL, DMY';
SELECT ts = '2025-02-01 10:00:00+00'::timestamptz, d = 0.1::float8 + 0.2::float8 FROM vals WHERE id = 1}),
   't|t', 'results are read the same under DateStyle SQL, DMY (compared locally)');
is($node->safe_psql('postgres', q{
SET DateStyle = 'German'; SET extra_float_digits = 0;
SELECT id FROM vals WHERE ts = '2025-02-01 10:00:00+00'::timestamptz AND d > 0.3 ORDER BY id}), "1\n2",
   'WHERE parameters are sent in ISO with full precision whatever the session says');

# ---- keyless statements spread over the masters ---------------------------------------------------
my %coordinators;
for (1 .. 12) {
    my $addr = $node->safe_psql('postgres', q{
SELECT count(*) FROM kw;
SELECT string_agg(address, ',') FROM picoroute_connections() WHERE server_name = 'pico'});
    $coordinators{ (split /\n/, $addr)[1] } = 1;
}
cmp_ok(scalar(keys %coordinators), '>=', 2, 'keyless statements of different sessions use different coordinators');

# ---- read_preference reaches the server ------------------------------------------------------------
# It travels in the startup packet's options, in Picodata's syntax; the instances' Picodata fronts
# read it there (and log it) and the read succeeds.
$node->safe_psql('postgres', q{
CREATE SERVER pico_rp FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname 'picodata', read_preference 'replica');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_rp OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE users_rp (id bigint, name text, v bigint) SERVER pico_rp
  OPTIONS (table_name 'users', sharding_key 'id');
});
is($node->safe_psql('postgres', 'SELECT name FROM users_rp WHERE id = 5'), 'name_5',
   'read_preference replica: the read succeeds through the front');
{
    my $dir = emu_json('status', '--json')->{dir};
    my $seen = 0;
    for my $log (glob("$dir/*/front.log")) {
        open(my $fh, '<', $log) or next;
        $seen ||= grep { /read_preference=replica/ } <$fh>;
        close $fh;
    }
    ok($seen, 'read_preference is sent to the server as a startup option (read_preference=replica)');
}

# ---- declarations checked against _pico_table -----------------------------------------------------
is($node->safe_psql('postgres', q{SELECT picoroute_check_foreign_table('users')}), 't',
   'picoroute_check_foreign_table: a correct declaration');
create_servers($node, 'pico_other');
$node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE bad_key (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'v');
CREATE FOREIGN TABLE bad_tier (id bigint, name text, v bigint) SERVER pico_other
  OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE bad_type (id text, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE narrow (id integer, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'id');
});
my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT * FROM bad_key WHERE v = 7");
like($err, qr/ERROR:  HV021: picoroute: foreign table "bad_key" declares sharding_key \(v\), but Picodata table "users" is sharded by \(id\)/,
     'a mis-declared sharding_key: error at first use');
like($err, qr/HINT:  ALTER FOREIGN TABLE bad_key OPTIONS \(SET sharding_key 'id'\);/, '... with the fix');
($ret, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM bad_tier");
like($err, qr/Picodata table "users" is sharded in tier "default", but foreign table "bad_tier" is on server "pico_other" of tier "other"/,
     'a table on the wrong tier server: error at first use');
($ret, $out, $err) = $node->psql('postgres', "SELECT * FROM bad_type WHERE id = '5'");
like($err, qr/sharding key column "id" of foreign table "bad_type" is text, but Picodata column "id" is integer/,
     'a text column over a bigint key: error');
like($err, qr/ALTER FOREIGN TABLE bad_type ALTER COLUMN id TYPE bigint;/, '... with the fix');
($ret, $out, $err) = $node->psql('postgres', "SELECT picoroute_check_foreign_table('bad_type')");
like($err, qr/is text, but Picodata column "id" is integer/, 'picoroute_check_foreign_table reports it too');
($ret, $out, $err) = $node->psql('postgres', "SELECT name FROM narrow WHERE id = 5");
is($out, 'name_5', 'an integer column over a bigint key still routes');
like($err, qr/WARNING:  picoroute: sharding key column "id" of foreign table "narrow" is integer, narrower than Picodata's integer \(bigint\)/,
     '... with a warning');
# Once per session per table: the check at first use runs again after each change of the map.
{
    my $bg = $node->background_psql('postgres', on_error_stop => 0);
    $bg->query('SELECT name FROM narrow WHERE id = 5');
    emu('move', 'default', '1', '1', 'default_2');
    ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '3', 20),
        'the map changed (bucket 1 moved)');
    $bg->query('SELECT name FROM narrow WHERE id = 6');
    $bg->query('SELECT name FROM narrow WHERE id = 7');
    my @narrow = ($bg->{stderr} =~ /narrower than Picodata's/g);
    is(scalar @narrow, 1, 'the narrower key type warns once per session per table, map changes or not')
      or diag($bg->{stderr});
    $bg->quit;
    emu('move', 'default', '1', '1', 'default_1');
    ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 20),
        'bucket 1 moved back');
}
($ret, $out, $err) = $node->psql('postgres', q{
CREATE FOREIGN TABLE missing (id bigint) SERVER pico OPTIONS (table_name 'no_such_table', sharding_key 'id');
SELECT picoroute_check_foreign_table('missing')});
like($err, qr/Picodata has no table "no_such_table"/, 'picoroute_check_foreign_table: unknown table');

# Each fix a mis-declaration's hint gives runs as given (ADD or SET, DROP only of an option the
# table has: an imported table carries distribution 'sharded'), and declares the table right.
emu_table('gl', 'code text, name text', args => ['--global']);
$node->safe_psql('postgres', q{
CREATE FOREIGN TABLE hint_global (code text, name text) SERVER pico
  OPTIONS (table_name 'gl', distribution 'sharded', sharding_key 'code');
CREATE FOREIGN TABLE hint_sharded (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', distribution 'global');
CREATE FOREIGN TABLE hint_key (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', distribution 'sharded', sharding_key 'v');
});
for my $t (qw(hint_global hint_sharded hint_key)) {
    ($ret, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM $t");
    my ($fix) = $err =~ /HINT:  (ALTER FOREIGN TABLE [^\n]*;)/;
    ok(defined $fix, "$t: the mis-declaration's error gives a fix") or diag($err);
    ($ret, $out, $err) = $node->psql('postgres', $fix // 'SELECT 1/0');
    is($ret, 0, "$t: the fix runs as given: " . ($fix // '(none)')) or diag($err);
    ($ret, $out, $err) = $node->psql('postgres', "SELECT picoroute_check_foreign_table('$t')");
    is($out, 't', "$t: the declaration agrees with Picodata after it") or diag($err);
}

# ---- a masters scatter never doubles rows: add-replicaset --no-rebalance, then the rebalance ----
my $total = $node->safe_psql('postgres', 'SELECT count(*) FROM users');
emu('add-replicaset', '--no-rebalance');
ok(wait_for($node, "SELECT count(*) FROM picoroute_replicasets WHERE tier = 'default'", '3', 20),
   'the new replicaset is in the map');
is($node->safe_psql('postgres', 'SELECT count(*) FROM users_m'), $total,
   'masters scatter: exact count while a master owns no bucket');
is($node->safe_psql('postgres', 'SELECT count(*) FROM users'), $total,
   'coordinator scatter: exact count while a master owns no bucket');
unlike($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*) FROM users_m'), qr/3 masters/,
       'the master without buckets is not asked');
my $rebalance = IPC::Run::start(emu_command('rebalance'), '>', \my $rb_out, '2>', \my $rb_err);
my ($counts, $wrong, $errors) = (0, 0, 0);
while ($rebalance->pumpable) {
    for my $table (qw(users_m users)) {
        my ($r, $o, $e) = $node->psql('postgres', "SELECT count(*) FROM $table");
        if ($r != 0) { $errors++; diag("during the rebalance ($table): $e"); next; }
        $counts++;
        $wrong++ if $o ne $total;
    }
    $rebalance->pump_nb;
    sleep 0.05;
}
ok($rebalance->finish, 'rebalance finished') or diag($rb_err);
cmp_ok($counts, '>', 0, "counted during the rebalance ($counts counts)");
is($wrong, 0, 'every count(*) during the rebalance was exact');
ok(wait_for($node, "SELECT count(DISTINCT replicaset_name) FROM picoroute_buckets WHERE tier = 'default'", '3', 20),
   'the map shows the rebalance');
is($node->safe_psql('postgres', 'SELECT count(*) FROM users_m'), $total, 'masters scatter after the rebalance');
like($node->safe_psql('postgres', 'EXPLAIN (COSTS OFF) SELECT count(*) FROM users_m'), qr/scatter to the 3 masters/,
     'after the rebalance, three masters are asked');

$node->stop;
done_testing();
