# Writes and failures against the emulator: COPY FROM, tuple routing into a foreign partition and
# a pg_dump --include-foreign-data restore (rows land on their owners); reads and writes stopped by
# statement_timeout (no cancel is sent: Picodata has none; the DETAIL says the remote statement may
# still run and a write be applied, and it is); a multi-row INSERT that
# fails on one owner; remote writes inside transaction blocks (one warning per block, one at its
# rollback counting the remote writes that stay applied); remote errors logged like any ERROR;
# the view owner's user mapping; IMPORT FOREIGN SCHEMA of hostile catalog rows; string constants
# with standard_conforming_strings off on either side.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use Picoroute::TestCluster
  qw(emu emu_json start_emulator start_picoroute_node wait_for exec_options picodata_release_with);

my $xo = exec_options();    # the emulator's instances parse no Picodata OPTION clause

# Strict mode (Picodata's forward=off, capability forward) proves where rows land: pin a release with it.
start_emulator(picodata => picodata_release_with(forward => 1));
emu('create-table', 'users', '--columns', 'id int8, name text, v int8');
emu('create-table', 'tkeys', '--columns', 'k text, v int8');
emu('create-table', 'dumped', '--columns', 'id int8, name text');
emu('load', 'dumped', '--rows', '60');

my $status = emu_json('status', '--json');
my @masters = grep { $_->{role} eq 'master' } @{ $status->{instances} };
my %port_of = map { $_->{name} => $_->{port} } @{ $status->{instances} };
my %name_of_port = map { $_->{port} => $_->{name} } @{ $status->{instances} };

# SQL on one emulated instance as its superuser.
sub on_instance {
    my ($instance, $sql) = @_;
    return emu('psql', $instance, '--', '-qAt', '-v', 'ON_ERROR_STOP=1', '-c', $sql);
}
sub on_masters {
    my ($sql) = @_;
    on_instance($_->{name}, $sql) for @masters;
}
# Rows of the storage table of `table` on each master: { instance => count }.
sub stored {
    my ($table) = @_;
    return { map { $_->{name} => on_instance($_->{name}, "SELECT count(*) FROM _picoemu_local.$table") } @masters };
}
sub total { my $h = shift; my $t = 0; $t += $_ for values %$h; return $t; }

my $node = start_picoroute_node(
    name => 'writes',
    refresh_interval => '300ms',
    extra_conf => "max_prepared_transactions = 2\n");
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 20), 'map loaded');

$node->safe_psql('postgres', qq{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata', batch_size '7', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE tkeys (k text, v bigint) SERVER pico OPTIONS (sharding_key 'k');
CREATE FOREIGN TABLE dumped (id bigint, name text) SERVER pico OPTIONS (sharding_key 'id');
});

# ---- COPY FROM, tuple routing, pg_dump restore ------------------------------------------------
# Strict mode: a row sent to an instance that does not own its bucket is refused, so success
# means every row reached its owner.
emu('strict', 'on');
my $copy = join('', map { "$_\tcopied_$_\t$_\n" } 1 .. 50);
my ($ret, $out, $err) = $node->psql('postgres', "COPY users (id, name, v) FROM STDIN;\n$copy\\.\n");
is($ret, 0, 'COPY FROM STDIN into a foreign table succeeds') or diag($err);
is($out, '', 'COPY prints nothing');
my $s = stored('users');
is(total($s), 50, 'COPY stored the 50 rows');
ok((grep { $_ > 0 } values %$s) == 2, 'COPY rows landed on both owners (strict mode on)');
is($node->safe_psql('postgres', "SELECT name FROM users WHERE id = 37"), 'copied_37', 'a copied row reads back by key');
($ret, $out, $err) = $node->psql('postgres', "COPY tkeys FROM STDIN (FORMAT csv);\n"
    . join('', map { "key$_,$_\n" } 1 .. 30) . "\\.\n");
is($ret, 0, 'COPY with a text sharding key') or diag($err);
is(total(stored('tkeys')), 30, 'COPY stored 30 text-keyed rows');

# A local partitioned table with a picoroute foreign partition.
$node->safe_psql('postgres', q{
CREATE TABLE parted (id bigint, name text, v bigint) PARTITION BY RANGE (id);
CREATE TABLE parted_local PARTITION OF parted FOR VALUES FROM (0) TO (1000);
CREATE FOREIGN TABLE parted_remote PARTITION OF parted FOR VALUES FROM (1000) TO (100000)
  SERVER pico OPTIONS (table_name 'users', sharding_key 'id');
});
($ret, $out, $err) = $node->psql('postgres',
    "INSERT INTO parted SELECT g, 'routed_' || g, g FROM generate_series(995, 1040) g");
is($ret, 0, 'INSERT into a partitioned table routes rows into the foreign partition') or diag($err);
is(total(stored('users')), 50 + 41, 'the 41 routed rows are stored remotely');
is($node->safe_psql('postgres', 'SELECT count(*) FROM parted_local'), '5', 'the other 5 rows stayed local');
($ret, $out, $err) = $node->psql('postgres', "COPY parted FROM STDIN;\n"
    . join('', map { "$_\tcp_$_\t0\n" } 2001 .. 2010) . "\\.\n");
is($ret, 0, 'COPY into the partitioned table routes into the foreign partition') or diag($err);
# Counted on the storages: under strict mode a read of keys owned by both replicasets is refused,
# as Picodata refuses with forward=off a statement whose buckets span replicasets.
is(total(stored('users')), 50 + 41 + 10, 'COPY through the partitioned table stored its rows');
($ret, $out, $err) = $node->psql('postgres', "INSERT INTO parted VALUES (5000, 'x', 1) RETURNING *");
is($out, '5000|x|1', 'RETURNING through a foreign partition returns the row as sent') or diag($err);
is(total(stored('users')), 50 + 41 + 10 + 1, 'and stores it');

# pg_dump --include-foreign-data, then restore into a new database: the rows go back.
# Reading a whole table goes through a coordinator, which strict mode forbids.
emu('strict', 'off');
my $dump = $node->basedir . '/dump.sql';
$node->command_ok(['pg_dump', '-p', $node->port, '-h', $node->host, '--include-foreign-data=pico',
                   '-t', 'dumped', '-f', $dump, 'postgres'], 'pg_dump --include-foreign-data');
my $dump_text = slurp_file($dump);
like($dump_text, qr/COPY public\.dumped \(id, name\) FROM stdin;/, 'the dump holds the remote rows');
$node->safe_psql('postgres', 'DELETE FROM dumped');
is(total(stored('dumped')), 0, 'remote rows deleted');
emu('strict', 'on');
$node->safe_psql('postgres', q{
CREATE DATABASE restored;
});
$node->safe_psql('restored', qq{
CREATE EXTENSION picoroute;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata', batch_size '7', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
});
($ret, $out, $err) = $node->psql('restored', $dump_text);
is($ret, 0, 'the dump restores') or diag($err);
$s = stored('dumped');
is(total($s), 60, 'restoring the dump stored the 60 rows again');
ok((grep { $_ > 0 } values %$s) == 2, 'restored rows are on both owners (strict mode on)');
is($node->safe_psql('restored', "SELECT name FROM dumped WHERE id = 42"), 'name_42', 'a restored row reads back');
emu('strict', 'off');

# ---- multi-row INSERT failing on one owner ------------------------------------------------------
# id 3000 exists already on its owner: the rows of the other owner are committed, and the error
# says so.
$node->safe_psql('postgres', "INSERT INTO users VALUES (3000, 'first', 0)");
my $owner3000 = emu_json('locate', 'users', '--key', '[3000]');
($ret, $out, $err) = $node->psql('postgres',
    "INSERT INTO users SELECT g, 'multi', 0 FROM generate_series(2991, 3010) g");
isnt($ret, 0, 'a multi-row INSERT with a duplicate key on one owner fails');
like($err, qr/Duplicate key exists in unique index/, 'the remote error is shown');
like($err, qr/The statement failed on instance 127\.0\.0\.1:$owner3000->{port}\./,
     'DETAIL names the instance where it failed');
# A duplicate key is an error of the statement, not a refusal before running: the DETAIL claims
# nothing about that instance (core/routing/answer.h, outcome_of).
unlike($err, qr/not applied there/, 'and does not claim it was not applied there');
my $committed = $node->safe_psql('postgres',
    "SELECT count(*) FROM users WHERE id BETWEEN 2991 AND 3010 AND name = 'multi'");
ok($committed > 0, "rows of the other owner were committed ($committed)");
my ($reported, $where) = $err =~ /(\d+) rows of this statement were already committed on Picodata \(([^)]*)\)/;
is($reported, $committed, 'DETAIL says how many rows were committed');
my $sum = 0;
$sum += $_ for ($where // '') =~ /127\.0\.0\.1:\d+: (\d+)/g;
is($sum, $committed, 'and on which instances');

# ---- writes inside a transaction block ------------------------------------------------------------
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
INSERT INTO users VALUES (4001, 'tx', 0);
INSERT INTO users VALUES (4002, 'tx', 0);
UPDATE users SET v = 1 WHERE id = 4001;
ROLLBACK;
});
is($ret, 0, 'writes inside BEGIN ... ROLLBACK');
my @warnings = ($err =~ /WARNING:  picoroute: writes to Picodata/g);
is(scalar @warnings, 1, 'one warning per transaction block');
like($err, qr/WARNING:  picoroute: the rollback does not undo the 3 remote write statements this transaction sent to Picodata/,
     'ROLLBACK says how many remote write statements stay applied');
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE id IN (4001, 4002)"), '2',
   'ROLLBACK does not undo remote writes (as the warning says)');
# A TPC-B-like transaction (pgbench's shape): one warning for the block, none at COMMIT.
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
UPDATE users SET v = v + 5 WHERE id = 4001;
SELECT v FROM users WHERE id = 4001;
UPDATE users SET v = v + 5 WHERE id = 4002;
UPDATE users SET v = v + 5 WHERE id = 4001;
INSERT INTO users VALUES (4010, 'tx', 0);
END;
});
is($ret, 0, 'a TPC-B-like transaction block');
@warnings = ($err =~ /WARNING:  /g);
is(scalar @warnings, 1, 'one warning for its 4 remote writes') or diag($err);
unlike($err, qr/rollback does not undo/, 'no rollback warning at COMMIT');
# Under an OLTP load every transaction block writes: by default (once) only the session's first
# block warns; warn warns at each.
for my $mode (['once', 1], ['warn', 3]) {
    ($ret, $out, $err) = $node->psql('postgres', qq{
SET picoroute.remote_write_in_transaction = $mode->[0];
BEGIN; UPDATE users SET v = v + 1 WHERE id = 4001; COMMIT;
BEGIN; UPDATE users SET v = v + 1 WHERE id = 4001; COMMIT;
BEGIN; UPDATE users SET v = v + 1 WHERE id = 4001; COMMIT;
});
    @warnings = ($err =~ /WARNING:  picoroute: writes to Picodata/g);
    is(scalar @warnings, $mode->[1], "three blocks of a session, remote_write_in_transaction = $mode->[0]: "
        . "$mode->[1] warning(s)") or diag($err);
}
# ROLLBACK TO SAVEPOINT undoes nothing remote: no second warning, and the transaction still counts
# as having written (PREPARE TRANSACTION stays refused, the final rollback counts every write).
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
UPDATE users SET v = 1 WHERE id = 4001;
SAVEPOINT s;
UPDATE users SET v = 2 WHERE id = 4002;
ROLLBACK TO SAVEPOINT s;
UPDATE users SET v = 3 WHERE id = 4002;
ROLLBACK;
});
@warnings = ($err =~ /WARNING:  picoroute: writes to Picodata/g);
is(scalar @warnings, 1, 'ROLLBACK TO SAVEPOINT: still one warning per transaction block') or diag($err);
like($err, qr/does not undo the 3 remote write statements/, 'and the rollback counts the writes of the rolled back savepoint');
is($node->safe_psql('postgres', "SELECT v FROM users WHERE id = 4002"), '3', 'the writes stayed applied');
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
INSERT INTO users VALUES (4011, 'tx', 0);
SAVEPOINT s;
SELECT 1 / 0;
ROLLBACK TO SAVEPOINT s;
PREPARE TRANSACTION 'p0';
}, on_error_stop => 0);
like($err, qr/cannot PREPARE a transaction that has written to Picodata/,
     'PREPARE TRANSACTION after a remote write and a rolled back savepoint is refused');
# An error aborts the block: the warning comes with the abort.
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
INSERT INTO users VALUES (4012, 'tx', 0);
INSERT INTO users VALUES (4012, 'again', 0);
ROLLBACK;
});
like($err, qr/Duplicate key exists in unique index/, 'an error aborts the block');
like($err, qr/WARNING:  picoroute: the rollback does not undo the 2 remote write statements/,
     'the abort warns, counting the statements sent, the failed one included');
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE id = 4012"), '1', 'the first INSERT stayed applied');
($ret, $out, $err) = $node->psql('postgres', "INSERT INTO users VALUES (4003, 'auto', 0)");
unlike($err, qr/WARNING/, 'no warning outside a transaction block');
($ret, $out, $err) = $node->psql('postgres', q{
SET picoroute.remote_write_in_transaction = error;
BEGIN;
INSERT INTO users VALUES (4004, 'tx', 0);
});
like($err, qr/ERROR:  picoroute: write to Picodata \(users\) refused inside a transaction block/,
     'remote_write_in_transaction = error refuses the write');
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE id = 4004"), '0', 'nothing was sent');
($ret, $out, $err) = $node->psql('postgres', q{
SET picoroute.remote_write_in_transaction = off;
BEGIN;
INSERT INTO users VALUES (4005, 'tx', 0);
COMMIT;
});
is($err, '', 'remote_write_in_transaction = off says nothing');
($ret, $out, $err) = $node->psql('postgres', q{
SET picoroute.remote_write_in_transaction = off;
BEGIN;
INSERT INTO users VALUES (4013, 'tx', 0);
ROLLBACK;
});
is($err, '', 'remote_write_in_transaction = off says nothing at ROLLBACK either');
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
INSERT INTO users VALUES (4006, 'tx', 0);
PREPARE TRANSACTION 'p1';
});
like($err, qr/cannot PREPARE a transaction that has written to Picodata/, 'PREPARE TRANSACTION after a remote write is refused');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_prepared_xacts"), '0', 'nothing was prepared');
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
SELECT count(*) FROM users WHERE id = 1;
PREPARE TRANSACTION 'p2';
COMMIT PREPARED 'p2';
});
is($ret, 0, 'PREPARE TRANSACTION after reads only is allowed') or diag($err);

# ---- remote errors are ordinary ERRORs ---------------------------------------------------------
my $log_offset = -s $node->logfile;
($ret, $out, $err) = $node->psql('postgres', q{
SET log_min_messages = fatal;
INSERT INTO users VALUES (3000, 'again', 0);
});
like($err, qr/Duplicate key exists in unique index/, 'a remote error reaches the client');
my $log = slurp_file($node->logfile, $log_offset);
unlike($log, qr/Duplicate key exists in unique index/, 'with log_min_messages = fatal, the remote error is not forced into the log');
$log_offset = -s $node->logfile;
($ret, $out, $err) = $node->psql('postgres', "INSERT INTO users VALUES (3000, 'again', 0)");
$log = slurp_file($node->logfile, $log_offset);
my @logged = ($log =~ /ERROR:  sbroad: Duplicate key exists in unique index/g);
is(scalar @logged, 1, 'by default it is logged once, at ERROR');
like($log, qr/STATEMENT:  INSERT INTO users VALUES \(3000, 'again', 0\)/, 'with its statement');

# ---- reads and writes stopped by statement_timeout ------------------------------------------------
# Picodata has no cancel: it sends no BackendKeyData and its handshake refuses a CancelRequest, and
# a closed connection does not stop a statement. So a statement_timeout ends the local statement at
# once, sends no cancel (a cancel request would be refused by the fronts and fail the audit at the
# end of this file), and says that the remote statement may still run, and a write be applied.
# A global table whose reads and writes are slow on the instance (a view that sleeps; a table whose
# trigger sleeps).
on_masters(q{
CREATE VIEW slow_read AS SELECT 1::bigint AS id, pg_sleep(20)::text AS s;
GRANT SELECT ON slow_read TO picoroute;
CREATE TABLE slow_write (id bigint, note text);
GRANT ALL ON slow_write TO picoroute;
CREATE FUNCTION slow_write_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_sleep(3);
  RETURN NEW;
END $$;
CREATE TRIGGER slow BEFORE INSERT ON slow_write FOR EACH ROW EXECUTE FUNCTION slow_write_trigger();
});
$node->safe_psql('postgres', q{
CREATE FOREIGN TABLE slow_read (id bigint, s text) SERVER pico OPTIONS (distribution 'global');
CREATE FOREIGN TABLE slow_write (id bigint, note text) SERVER pico OPTIONS (distribution 'global');
});
# Remote backends still running `pattern` on any master.
sub remote_running {
    my ($pattern) = @_;
    my $n = 0;
    for my $m (grep { $_->{running} } @{ $status->{instances} }) {
        $n += on_instance($m->{name},
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '$pattern' AND pid <> pg_backend_pid()");
    }
    return $n;
}
my $t0 = time();
($ret, $out, $err) = $node->psql('postgres', q{
SET statement_timeout = '1s';
SELECT * FROM picoroute_exec('default', 1, 'SELECT "s" FROM "slow_read"', true) AS t(s text);
});
my $elapsed = time() - $t0;
like($err, qr/canceling statement due to statement timeout/, 'picoroute_exec read: statement_timeout');
ok($elapsed < 2, "the timeout returned at once, with no wait for a cancel (${elapsed}s)");
like($err, qr/DETAIL:  The remote statement may still run to its end on 127\.0\.0\.1:\d+: Picodata cannot cancel a statement\./,
     'picoroute_exec read: the DETAIL says the remote read may still run');
ok(remote_running('SELECT "s" FROM "slow_read"%') > 0, 'and it does run on: nothing stopped it');
$t0 = time();
($ret, $out, $err) = $node->psql('postgres', q{
SET statement_timeout = '1s';
SELECT * FROM slow_read;
});
$elapsed = time() - $t0;
like($err, qr/canceling statement due to statement timeout/, 'foreign scan: statement_timeout');
ok($elapsed < 2, "foreign scan: returned at once (${elapsed}s)");

# A write stopped by the timeout while it sleeps: not cancelled (it cannot be), so the DETAIL says
# it may still be applied, claims nothing about rows committed, and the write is applied later.
$t0 = time();
($ret, $out, $err) = $node->psql('postgres', q{
SET statement_timeout = '1s';
INSERT INTO slow_write VALUES (1, 'slow');
});
$elapsed = time() - $t0;
like($err, qr/canceling statement due to statement timeout/, 'write: statement_timeout');
ok($elapsed < 2, "write: returned at once (${elapsed}s)");
like($err, qr/DETAIL:  The statement may still run to its end on instance 127\.0\.0\.1:(\d+) and be applied there: Picodata cannot cancel a statement\./,
     'write: the DETAIL says it may still run and be applied');
unlike($err, qr/No row of this statement was committed/, 'write: and does not claim that nothing was committed');
my ($port) = $err =~ /may still run to its end on instance 127\.0\.0\.1:(\d+)/;
ok(wait_for_instance_row($name_of_port{$port // 0}), 'the write was indeed applied there afterwards');
sub wait_for_instance_row {
    my ($instance) = @_;
    return 0 unless defined $instance;
    my $deadline = time() + 15;
    while (time() < $deadline) {
        return 1 if on_instance($instance, "SELECT count(*) FROM slow_write WHERE note = 'slow'") eq '1';
        sleep 0.3;
    }
    return 0;
}

# ---- view owner's user mapping ----------------------------------------------------------------
$node->safe_psql('postgres', q{
CREATE ROLE good LOGIN;
CREATE ROLE bad LOGIN;
GRANT USAGE ON FOREIGN SERVER pico TO good, bad;
CREATE USER MAPPING FOR good SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE USER MAPPING FOR bad SERVER pico OPTIONS (user 'picoroute', password 'wrong');
GRANT SELECT, INSERT, UPDATE, DELETE ON users TO good, bad;
CREATE VIEW users_v AS SELECT id, name, v FROM users;
ALTER VIEW users_v OWNER TO good;
GRANT SELECT, INSERT, UPDATE, DELETE ON users_v TO bad;
});
($ret, $out, $err) = $node->psql('postgres', "SET ROLE bad; SELECT name FROM users WHERE id = 5");
like($err, qr/authentication failed/, "bad's own user mapping has a wrong password");
is($node->safe_psql('postgres', "SET ROLE bad; SELECT name FROM users_v WHERE id = 5"), 'copied_5',
   "a scan through good's view uses good's user mapping");
is($node->safe_psql('postgres', "SET ROLE bad; SELECT count(*) FROM users_v WHERE id BETWEEN 1 AND 50"), '50',
   'a scatter scan through the view too');
$node->safe_psql('postgres', "SET ROLE bad; INSERT INTO users_v VALUES (5001, 'via view', 0)");
is($node->safe_psql('postgres', "SELECT name FROM users WHERE id = 5001"), 'via view',
   "an INSERT through the view uses good's user mapping");
$node->safe_psql('postgres', "SET ROLE bad; UPDATE users_v SET v = 7 WHERE id = 5001");
is($node->safe_psql('postgres', "SELECT v FROM users WHERE id = 5001"), '7', 'an UPDATE through the view');
$node->safe_psql('postgres', "SET ROLE bad; DELETE FROM users_v WHERE id = 5001");
is($node->safe_psql('postgres', "SELECT count(*) FROM users WHERE id = 5001"), '0', 'a DELETE through the view');
($ret, $out, $err) = $node->psql('postgres', "SET ROLE bad; INSERT INTO users VALUES (5002, 'direct', 0)");
like($err, qr/authentication failed/, "a direct INSERT by bad still uses bad's mapping");

# ---- IMPORT FOREIGN SCHEMA of hostile catalog rows -------------------------------------------
my $coordinator = $masters[0]{name};
# Catalog rows are written on every master; IMPORT reads one of them.
sub add_catalog_row {
    my ($id, $name_sql, $distribution_sql, $format_sql) = @_;
    on_masters("INSERT INTO _pico_table VALUES ($id, $name_sql, $distribution_sql, $format_sql, 1, true, 'memtx', 0, '')");
}
sub import_error {
    my ($table) = @_;
    my ($r, $o, $e) = $node->psql('postgres', "DROP SCHEMA IF EXISTS imp CASCADE; CREATE SCHEMA imp;
        IMPORT FOREIGN SCHEMA picodata LIMIT TO (\"$table\") FROM SERVER pico INTO imp");
    return $e;
}
# PostgreSQL's json input refuses such nesting and such escapes (Picodata keeps `format` as
# msgpack, which does not): on the instances of this test, `_pico_table` (a view over the catalog
# file the emulator writes) is swapped for a table of the same rows whose `format` holds text.
on_masters(q{
ALTER VIEW _pico_table RENAME TO _pico_table_saved;
CREATE TABLE _pico_table AS SELECT * FROM _pico_table_saved;
ALTER TABLE _pico_table ALTER COLUMN format TYPE text;
GRANT SELECT ON _pico_table TO picoroute;
});
my $ok_format = q{'[{"name":"id","field_type":"integer","is_nullable":false}]'};
my $sharded = q{'{"ShardedImplicitly":[["id"],"murmur3","default"]}'};
add_catalog_row(901, "'deep'", $sharded, "repeat('[', 60000) || repeat(']', 60000)");
like(import_error('deep'), qr/ERROR:  picoroute: cannot import table "deep": format: json nested deeper than 32 levels/,
     'a format nested 60,000 levels deep is refused, naming the table');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the backend survived');
add_catalog_row(902, "'nul'", $sharded, q{'[{"name":"a\u0000b","field_type":"integer"}]'});
like(import_error('nul'), qr/cannot import table "nul": a column name "a\\x00b" contains a NUL character/,
     '\u0000 in a name is refused, not truncated');
add_catalog_row(903, "'surrogate'", $sharded, q{'[{"name":"a\ud800","field_type":"integer"}]'});
like(import_error('surrogate'), qr/cannot import table "surrogate": format: invalid json/, 'a lone surrogate is refused');
add_catalog_row(904, "'escape'", $sharded, q{'[{"name":"a\qb","field_type":"integer"}]'});
like(import_error('escape'), qr/cannot import table "escape": format: invalid json/, 'an invalid escape is refused');
my $long_format = q('[{"name":") . ('x' x 64) . q(","field_type":"integer"}]');
add_catalog_row(905, "'longname'", $sharded, $long_format);
like(import_error('longname'), qr/cannot import table "longname": a column name "x+" is longer than 63 bytes/,
     'a name that would be truncated is refused');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relnamespace = 'imp'::regnamespace"), '0',
   'no foreign table was created from a bad row');

# A table name with quotes and backslashes, imported with standard_conforming_strings off.
my $weird = q{we'ird\\'); CREATE FOREIGN TABLE planted (x int) SERVER pico;--\\};
ok(length($weird) < 64, 'the hostile name fits NAMEDATALEN');
(my $weird_literal = $weird) =~ s/'/''/g;
(my $weird_ident = $weird) =~ s/"/""/g;
add_catalog_row(906, "'$weird_literal'", $sharded, $ok_format);
$node->safe_psql('postgres', q{DROP SCHEMA IF EXISTS imp CASCADE; CREATE SCHEMA imp;});
($ret, $out, $err) = $node->psql('postgres', qq{
SET standard_conforming_strings = off;
SET escape_string_warning = off;
IMPORT FOREIGN SCHEMA picodata LIMIT TO ("$weird_ident") FROM SERVER pico INTO imp;
});
is($ret, 0, 'IMPORT with standard_conforming_strings = off') or diag($err);
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relnamespace = 'imp'::regnamespace"), '1',
   'exactly one foreign table was created');
is($node->safe_psql('postgres', "SELECT relname FROM pg_class WHERE relnamespace = 'imp'::regnamespace"), $weird,
   'with the exact name');
is($node->safe_psql('postgres', "SELECT array_to_string(ftoptions, '|') FROM pg_foreign_table WHERE ftrelid = (SELECT oid FROM pg_class WHERE relnamespace = 'imp'::regnamespace)"),
   "table_name=$weird|distribution=sharded|sharding_key=id", 'and the exact table_name option');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'planted'"), '0',
   'nothing was planted');
on_masters('DROP TABLE _pico_table; ALTER VIEW _pico_table_saved RENAME TO _pico_table');

# ---- string constants with standard_conforming_strings off on the instances ----------------------
$node->safe_psql('postgres', q{INSERT INTO users VALUES (6001, 'back\slash', 0), (6002, 'plain', 0)});
on_masters('ALTER ROLE picoroute SET standard_conforming_strings = off');
$node->safe_psql('postgres', 'SELECT picoroute_disconnect_all()');
is($node->safe_psql('postgres', q{SELECT id FROM users WHERE name = 'back\slash'}), '6001',
   'a constant with a backslash matches with standard_conforming_strings off remotely');
is($node->safe_psql('postgres', q{SELECT count(*) FROM users WHERE name IN ('back\slash', 'plain') AND id > 6000}), '2',
   'IN list with a backslash');
on_masters('ALTER ROLE picoroute RESET standard_conforming_strings');
$node->safe_psql('postgres', 'SELECT picoroute_disconnect_all()');
# (The emulator's own PL/pgSQL write path does not run with standard_conforming_strings off: the
# write case checks that the value goes as a parameter, and stores the exact value.)
like($node->safe_psql('postgres', q{EXPLAIN (VERBOSE, COSTS OFF) UPDATE users SET name = 'new\value' WHERE id = 6002}),
     qr/Remote SQL: UPDATE "?users"? SET "?name"? = \$1 WHERE/, 'a SET constant with a backslash goes as a parameter');
$node->safe_psql('postgres', q{UPDATE users SET name = 'new\value' WHERE id = 6002});
is($node->safe_psql('postgres', q{SELECT name FROM users WHERE id = 6002}), 'new\value',
   'an UPDATE with a backslash constant stores the exact value');

$node->stop;
done_testing();
