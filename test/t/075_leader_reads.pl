# Reads that must run on the leaders, against the emulator's read_preference model.
#
# From 26.1.1 a Picodata session that names no read_preference takes the cluster's setting, which may
# be replica or any (src/config/mod.rs, src/pgproto/backend.rs:110-113): picoroute names it on every
# connection. With the cluster's default set to replica: a session that names none reads its
# master's part on a replica (the emulator's model, so the test can fail); picoroute's reads of a
# leader server, its writes and a read after a write stay on the master; a replica server's reads go
# to a replica until its transaction wrote. An unlogged table (not replicated) is read on the
# leaders whatever the server says, and with sql_preemption on Picodata refuses every read that is
# not a leader read: picoroute sends it again at once as a leader read and remembers it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep);
use Picoroute::TestCluster
  qw(emu emu_json emu_table start_emulator start_routing_node create_servers create_foreign_tables
  picodata_has emu_counters counters_moved);

start_emulator();
emu_table('users', 'id int8, name text', rows => 100);

my $node = start_routing_node(name => 'leader_reads');
create_servers($node, qw(pico pico_r));
create_foreign_tables($node, 'users', 'id bigint, name text', 'id', qw(pico pico_r));

my $status = emu_json('status', '--json');
my $loc = emu_json('locate', 'users', '--key', '[7]');
my $master = $loc->{master};
my ($replica) = grep { $_ ne $master } @{ (grep { $_->{name} eq $loc->{replicaset} } @{ $status->{replicasets} })[0]->{instances} };

# Runs `sql` (through `connstr` when given) and returns its output and the instances whose counters
# of `table` moved.
sub touched {
    my ($table, $sql, %psql) = @_;
    my $before = emu_counters($table);
    my ($ret, $out, $err) = $node->psql('postgres', $sql, %psql);
    die "statement failed: $sql\n$err" if $ret != 0;
    my $t = [];
    for (1 .. 40) {
        sleep 0.1;
        $t = counters_moved($before, emu_counters($table));
        last if @$t;
    }
    sleep 1.2;    # let any other instance publish its statistics too
    return ($out, counters_moved($before, emu_counters($table)));
}

SKIP: {
    skip 'replicas serve no reads before 26.1: there is no read_preference', 1
      unless picodata_has('read_preference');

    emu('set', 'read_preference', 'replica');
    # The emulator: a session that names no read_preference takes the cluster's (what a client that
    # leaves it out gets), so the master's own part is read on its replica.
    my ($out, $t) = touched('users', 'SELECT name FROM users WHERE id = 7',
        connstr => emu('conninfo', '--instance', $master));
    is($out, 'name_7', 'a session without read_preference reads the row');
    is_deeply($t, [$replica], "the cluster's default replica sends it to the replica $replica");

    # picoroute names the leader.
    ($out, $t) = touched('users', 'SELECT name FROM users WHERE id = 7');
    is($out, 'name_7', 'a read of the leader server');
    is_deeply($t, [$master], "stays on the master $master (startup option read_preference=leader)");
    ($out, $t) = touched('users', "UPDATE users SET name = 'w1' WHERE id = 7");
    is_deeply($t, [$master], 'a write goes to the master');
    ($out, $t) = touched('users', 'SELECT name FROM users WHERE id = 7');
    is($out, 'w1', 'the read after the write sees it');
    is_deeply($t, [$master], 'on the master');

    # A replica server's reads go to a replica, until its transaction wrote.
    ($out, $t) = touched('users', 'SELECT name FROM users_r WHERE id = 7');
    is($out, 'w1', 'a read of the replica server');
    is_deeply($t, [$replica], "is served by the replica $replica");
    my $xact = "SET picoroute.remote_write_in_transaction = off; BEGIN; "
      . "UPDATE users_r SET name = 'w2' WHERE id = 7; SELECT name FROM users_r WHERE id = 7; COMMIT;";
    ($out, $t) = touched('users', $xact);
    like($out, qr/^w2$/m, 'in a transaction that wrote through it, the read sees the write');
    is_deeply($t, [$master], 'read and write both on the master');
    ($out, $t) = touched('users', 'SELECT name FROM users_r WHERE id = 7');
    is_deeply($t, [$replica], 'after the transaction, a replica again');

    # picoroute_exec: read_only false means the leader.
    ($out, $t) = touched('users',
        q{SELECT * FROM picoroute_exec('default', picoroute_bucket_id('default', 7::bigint),
          'SELECT "name" FROM "users" WHERE "id" = 7') AS t(name text)});
    is_deeply($t, [$master], 'picoroute_exec (read_only false) reads on the master');
    ($out, $t) = touched('users',
        q{SELECT * FROM picoroute_exec('default', picoroute_bucket_id('default', 7::bigint),
          'SELECT "name" FROM "users" WHERE "id" = 7', true) AS t(name text)});
    is_deeply($t, [$replica], 'picoroute_exec read_only: a replica serves it');
    emu('set', 'read_preference', 'leader');
}

# The reads Picodata refused for not being leader reads, as the fronts logged them.
sub leader_refusals {
    my $n = 0;
    for my $inst (@{ emu_json('status', '--json')->{instances} }) {
        (my $front_log = $inst->{log}) =~ s{postgres\.log$}{front.log};
        next unless -e $front_log;
        $n += () = slurp_file($front_log) =~ /read_preference: refused/g;
    }
    return $n;
}

SKIP: {
    skip 'no unlogged tables before 26.1', 1 unless picodata_has('unlogged_tables');

    # An unlogged table is not replicated: its reads go to the leaders, whatever the server says.
    emu('create-table', 'scratch', '--columns', 'id int8, name text', '--unlogged');
    emu('load', 'scratch', '--rows', '50');
    my $owner = emu_json('locate', 'scratch', '--key', '[7]')->{master};
    $node->safe_psql('postgres', q{CREATE SCHEMA imp;
        IMPORT FOREIGN SCHEMA public LIMIT TO (scratch) FROM SERVER pico_r INTO imp;
        CREATE FOREIGN TABLE scratch_r (id bigint, name text) SERVER pico_r
            OPTIONS (table_name 'scratch', sharding_key 'id');});
    like($node->safe_psql('postgres', "SELECT array_to_string(ftoptions, ',') FROM pg_foreign_table "
                              . "WHERE ftrelid = 'imp.scratch'::regclass"),
         qr/unlogged=true/, "IMPORT FOREIGN SCHEMA keeps that the table is unlogged (_pico_table.opts)");
    my $refused = leader_refusals();
    for my $table ('imp.scratch', 'scratch_r') {
        my ($out, $t) = touched('scratch', "SELECT name FROM $table WHERE id = 7");
        is($out, 'name_7', "$table: a read of the replica server");
        is_deeply($t, [$owner], "$table: goes to the master $owner (the table is unlogged)");
        is($node->safe_psql('postgres', "SELECT count(*) FROM $table"), '50', "$table: a keyless read");
    }
    is(leader_refusals(), $refused, 'picoroute knew: Picodata refused none of them');

    # Without a grant on _pico_table picoroute cannot know: Picodata refuses the read, picoroute
    # sends it again at once as a leader read.
    emu('revoke', '_pico_table');
    $node->safe_psql('postgres', q{CREATE FOREIGN TABLE scratch_blind (id bigint, name text) SERVER pico_r
        OPTIONS (table_name 'scratch', sharding_key 'id');});
    is($node->safe_psql('postgres', 'SELECT name FROM scratch_blind WHERE id = 7'), 'name_7',
       'an unlogged table picoroute could not know of is read all the same');
    is(leader_refusals(), $refused + 1, 'after one refusal, sent again as a leader read');
    emu('grant', '_pico_table');
}

SKIP: {
    skip 'replicas serve no reads before 26.1: there is no read_preference', 1
      unless picodata_has('read_preference');

    # sql_preemption: every read that is not a leader read is refused; picoroute reads on the leaders
    # from then on, for that server, in that session.
    emu('set', 'sql_preemption', 'true');
    my $refused = leader_refusals();
    my ($out) = touched('users', 'SELECT name FROM users_r WHERE id = 8; SELECT count(*) FROM users_r;'
        . ' SELECT name FROM users_r WHERE id = 9;');
    is($out, "name_8\n100\nname_9", 'with sql_preemption on, a replica server reads right');
    is(leader_refusals(), $refused + 1, 'refused once, then the session reads on the leaders');
    is($node->safe_psql('postgres', 'SELECT count(*) FROM users'), '100', 'a leader server is never refused');
    is(leader_refusals(), $refused + 1, 'no refusal for it');
    emu('set', 'sql_preemption', 'false');
}

# ---- SQL semantics pushdown relies on ----------------------------------------------------------------
# A scalar aggregate whose key conditions contradict each other has no bucket: without the capability
# empty_set_aggregate (up to 26.2.1-rc1) Picodata answers NULL for count
# (test/int/sql/eliminate_motion.sql, scalar-agg-1); the emulator answers as the version does.
# picoroute answers as PostgreSQL does.
{
    my $master1 = $status->{replicasets}[0]{master};
    my ($ret, $raw) = $node->psql('postgres', 'SELECT count(*) FROM users WHERE id = 1 AND id = 2',
        connstr => emu('conninfo', '--instance', $master1));
    is($raw, picodata_has('empty_set_aggregate') ? '0' : '',
       'the emulated version answers count(*) over an empty bucket set as Picodata does');
    # PostgreSQL sees no contradiction between id = 1 and (id = 2 OR (id = 3 AND name = 'x'));
    # Picodata finds no bucket (each OR-of-AND chain fixes id twice). The key id = 1 routes the
    # aggregate to its owner (an OR of plain key equalities would be a key list, which keeps the
    # aggregate here).
    my $sql = q{SELECT count(*), sum(id) FROM users WHERE id = 1 AND (id = 2 OR (id = 3 AND name = 'x'))};
    my $plan = $node->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) $sql");
    like($plan, qr/Remote SQL: SELECT count\(\*\), sum\("id"\) FROM "users" WHERE .*\("id" = 2\).*\("id" = 1\)/,
         'the aggregate goes to Picodata with both conditions');
    like($plan, qr/Routing: bucket \d+ ->/, 'to the owner of the key');
    is($node->safe_psql('postgres', $sql), '0|', 'count is 0 and sum NULL, as in PostgreSQL');
    is($node->safe_psql('postgres',
        q{SELECT count(*), sum(id) FROM users WHERE id = 3 AND (id = 2 OR (id = 3 AND name = 'name_3'))}),
       '1|3', 'and right when a row matches');
}

# || on texts goes to Picodata with every operand in parentheses: the fronts refuse a || next to an
# arithmetic operator on versions where its precedence differs from PostgreSQL's.
like($node->safe_psql('postgres',
        q{EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM users WHERE name || '!' || name = 'name_5!name_5'}),
     qr/Remote SQL: SELECT "id" FROM "users" WHERE \(\(\("name" \|\| '!'\) \|\| "name"\) = 'name_5!name_5'\)/,
     '|| is sent, parenthesised');
is($node->safe_psql('postgres', q{SELECT id FROM users WHERE name || '!' || name = 'name_5!name_5'}), '5',
   'and answers as PostgreSQL');

done_testing();
