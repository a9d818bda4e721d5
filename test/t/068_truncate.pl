# TRUNCATE of picoroute foreign tables: one remote TRUNCATE TABLE per table, sent once (even on a
# 'masters' scatter server), empties a sharded table on every replicaset and a global table on every
# master; two tables in one statement are two remote statements; inside BEGIN ... ROLLBACK it warns
# (a remote write committed at once) and the table stays empty; remote_write_in_transaction = error
# refuses it; a declaration that disagrees with the cluster fails before anything is sent; CASCADE
# and RESTART IDENTITY are accepted; `pgbench -i -I G` works. The Picodata fronts take TRUNCATE as
# the grammar does (one table, nothing of PostgreSQL's) and refuse the rest. EXPLAIN (VERBOSE) of
# an INSERT shows the remote statement and how its rows are routed.
# Runs on every emulated version: TRUNCATE TABLE is in Picodata's grammar from 25.5.1 on.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Picoroute::TestCluster
  qw(emu emu_json emu_audit emu_audit_clear emu_private_psql emu_table start_emulator
  start_routing_node create_servers create_foreign_tables create_pgbench_tables picodata_version);

$ENV{PICOEMU_LOG_STATEMENTS} = '1';
my $dir = start_emulator(replicasets => 2, replication_factor => 1, bucket_count => 600);
note('emulated version ' . picodata_version());
emu_table('users', 'id int8, name text, v int8', rows => 300);
emu_table('notes', 'id int8, body text', rows => 100);
emu_table('cities', 'id int8, name text', args => ['--global']);
emu('insert', 'cities', map { ('--values', qq{[$_, "city $_"]}) } 1 .. 5);

my $status = emu_json('status', '--json');
my @masters = map { $_->{master} } @{ $status->{replicasets} };
my @logs = map { "$dir/$_->{name}/front.log" } @{ $status->{instances} };
my %offset = map { $_ => (-s $_ // 0) } @logs;

# The TRUNCATE statements the fronts received since the last call.
sub truncates_sent {
    my @out;
    for my $log (@logs) {
        open(my $fh, '<', $log) or next;
        seek($fh, $offset{$log}, 0);
        push @out, map { /statement: (TRUNCATE.*)$/i ? ($1) : () } <$fh>;
        $offset{$log} = tell($fh);
        close($fh);
    }
    return [ sort @out ];
}

# The rows of `table` in each master's storage, read around picoroute (private ports).
sub stored {
    my ($table) = @_;
    return join(',', map { emu_private_psql($_, "SELECT count(*) FROM _picoemu_local.$table") } @masters);
}

my $node = start_routing_node(name => 'truncate', admin => 1);
create_servers($node, qw(pico pico_m));
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', qw(pico pico_m));
$node->safe_psql('postgres', q{
CREATE FOREIGN TABLE notes (id bigint, body text) SERVER pico OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE cities (id bigint, name text) SERVER pico OPTIONS (distribution 'global');
CREATE FOREIGN TABLE users_alias (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE bad_notes (id bigint, body text) SERVER pico
  OPTIONS (table_name 'notes', sharding_key 'body');
CREATE FOREIGN TABLE ghost (id bigint) SERVER pico OPTIONS (sharding_key 'id');
});
truncates_sent();

# ---- a sharded table, through a 'masters' scatter server: sent once, every replicaset emptied ----
like(stored('users'), qr/^[1-9]\d*,[1-9]\d*$/, 'users has rows on both replicasets');
my ($ret, $out, $err) = $node->psql('postgres', 'TRUNCATE users_m');
is($ret, 0, 'TRUNCATE of a sharded foreign table') or diag($err);
is($err, '', 'outside a transaction block it says nothing');
is_deeply(truncates_sent(), ['TRUNCATE TABLE "users"'], 'one remote TRUNCATE TABLE, sent once');
is($node->safe_psql('postgres', 'SELECT count(*) FROM users'), '0', 'no row through picoroute');
is(stored('users'), '0,0', 'no row in any replicaset\'s storage');

# ---- a global table: every master's copy ----
is(stored('cities'), '5,5', 'every master holds the global table');
$node->safe_psql('postgres', 'TRUNCATE TABLE cities');
is_deeply(truncates_sent(), ['TRUNCATE TABLE "cities"'], 'the global table: one remote TRUNCATE TABLE');
is(stored('cities'), '0,0', 'every master\'s copy is empty');

# ---- two tables in one statement: two remote statements (Picodata takes one table each) ----
emu('load', 'users', '--rows', '50');
emu('insert', 'cities', '--values', '[1, "one"]');
$node->safe_psql('postgres', 'TRUNCATE users, cities RESTART IDENTITY CASCADE');
is_deeply(truncates_sent(), [ 'TRUNCATE TABLE "cities"', 'TRUNCATE TABLE "users"' ],
    'two foreign tables: two remote statements; CASCADE and RESTART IDENTITY accepted');
is(stored('users') . ';' . stored('cities'), '0,0;0,0', 'both are empty everywhere');
$node->safe_psql('postgres', 'TRUNCATE users, users_alias');
is_deeply(truncates_sent(), ['TRUNCATE TABLE "users"'],
    'two foreign tables of one server and one remote table: truncated once');

# ---- inside a transaction block: committed at once, like every remote write ----
like(stored('notes'), qr/^[1-9]\d*,[1-9]\d*$/, 'notes has rows on both replicasets');
($ret, $out, $err) = $node->psql('postgres', q{
BEGIN;
TRUNCATE notes;
ROLLBACK;
});
like($err, qr/WARNING:  picoroute: writes to Picodata \(notes\) are committed at once/,
    'TRUNCATE inside BEGIN warns that it is committed at once');
like($err, qr/WARNING:  picoroute: the rollback does not undo the 1 remote write statement /,
    'ROLLBACK counts the TRUNCATE among the remote writes it does not undo');
is(stored('notes'), '0,0', 'the table stays truncated after ROLLBACK');
emu('load', 'notes', '--rows', '10');
truncates_sent();
($ret, $out, $err) = $node->psql('postgres', q{
SET picoroute.remote_write_in_transaction = error;
BEGIN;
TRUNCATE notes;
});
like($err, qr/ERROR:  picoroute: write to Picodata \(notes\) refused inside a transaction block/,
    'remote_write_in_transaction = error refuses TRUNCATE inside BEGIN');
is_deeply(truncates_sent(), [], 'nothing was sent');
($ret, $out, $err) = $node->psql('postgres', 'TRUNCATE notes, bad_notes');
like($err, qr/declares sharding_key \(body\)/, 'a declaration that disagrees with the cluster fails');
is_deeply(truncates_sent(), [], 'before any table of the statement is sent');
is($node->safe_psql('postgres', 'SELECT count(*) FROM notes'), '10', 'the rows are still there');

# ---- a table Picodata does not have ----
($ret, $out, $err) = $node->psql('postgres', 'TRUNCATE ghost');
isnt($ret, 0, 'TRUNCATE of a foreign table with no Picodata table fails');
like($err, qr/ERROR:  table ghost does not exist/, 'with Picodata\'s error') or diag($err);

# ---- pgbench -i -I G: TRUNCATE of its four tables in a transaction block, then INSERT ... SELECT ----
# (-I g cannot work on foreign tables: PostgreSQL refuses its COPY ... FREEZE on a table not
# truncated locally in the same subtransaction, which a foreign table never is.)
create_pgbench_tables($node, 'pico');
emu('insert', 'pgbench_branches', '--values', '[1, 7, "left over"]');
truncates_sent();
$node->command_ok([ 'pgbench', '-i', '-I', 'G', '-s', '1', 'postgres' ],
    'pgbench -i -I G: its tables truncated, then filled');
is($node->safe_psql('postgres', q{SELECT (SELECT count(*) FROM pgbench_accounts) || ','
    || (SELECT count(*) FROM pgbench_tellers) || ',' || (SELECT sum(bbalance) FROM pgbench_branches)}),
    '100000,10,0', 'the rows pgbench generated, and not the row stored before');
is(scalar @{ truncates_sent() }, 4, 'one remote TRUNCATE TABLE per table');

# ---- the fronts: Picodata's grammar, one table, nothing of PostgreSQL's ----
sub front_psql {
    my ($sql) = @_;
    my ($stdout, $stderr);
    IPC::Run::run([ 'psql', '-X', '-At', emu('conninfo', '--instance', $masters[0]), '-c', $sql ],
        '>', \$stdout, '2>', \$stderr);
    return ($stdout // '') . ($stderr // '');
}
emu('load', 'notes', '--rows', '10', '--start', '11');
like(front_psql('TRUNCATE TABLE notes'), qr/^TRUNCATE TABLE$/m, 'a front answers TRUNCATE TABLE');
is(stored('notes'), '0,0', 'sent to one instance, it empties every replicaset');
like(front_psql('TRUNCATE nosuch'), qr/table nosuch does not exist/, 'a table that does not exist');
like(front_psql('TRUNCATE notes, users'), qr/rule parsing error: .*one table per TRUNCATE/,
    'two tables in one TRUNCATE: refused as Picodata\'s grammar does');
like(front_psql('TRUNCATE notes CASCADE'), qr/rule parsing error: .*no CASCADE/, 'CASCADE: refused');
my $refused = emu_audit();
is_deeply([ map { $_->{statement} } @$refused ], [ 'TRUNCATE notes, users', 'TRUNCATE notes CASCADE' ],
    'the audit holds the two refusals');
emu_audit_clear();

# ---- EXPLAIN (VERBOSE) of an INSERT: the remote statement and the routing of its rows ----
my $plan = $node->safe_psql('postgres',
    "EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO users VALUES (1, 'a', 1), (2, 'b', 2)");
like($plan, qr/Remote SQL: INSERT INTO "users" \("id", "name", "v"\) VALUES \(\$1, \$2, \$3\)/,
    'EXPLAIN VERBOSE INSERT shows the remote INSERT');
like($plan, qr/Routing: rows grouped by the owner of their bucket/, 'and how its rows are routed');
$plan = $node->safe_psql('postgres',
    "EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO cities VALUES (1, 'a')");
like($plan, qr/Routing: global table: .*coordinator/, 'a global table: one coordinator');

$node->stop;
done_testing();
