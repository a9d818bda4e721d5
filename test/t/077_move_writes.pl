# No acknowledged write is lost while buckets move: picoroute's INSERTs (multi-row, rows of both
# replicasets in each statement, batched per owner) from four concurrent sessions while buckets
# move back and forth and the tier is rebalanced. Every row of an INSERT that reported success is
# stored exactly once, on the master of the replicaset that owns its bucket. (Picodata's storage
# makes a statement wait for a move; the emulator made a split write lose a row now and then when
# a bucket moved between its parts.)
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
  qw(emu emu_private_psql start_emulator start_routing_node create_servers create_foreign_tables);

start_emulator(replication_factor => 1);
emu('create-table', 'users', '--columns', 'id int8, name text, v int8');
my $node = start_routing_node(name => 'move_writes', refresh_interval => '200ms',
    extra_conf => "picoroute.remote_write_in_transaction = 'off'\n");
create_servers($node, 'pico');
create_foreign_tables($node, 'users', 'id bigint, name text, v bigint', 'id', 'pico');

# Each session runs INSERTs of 8 consecutive ids and says which were acknowledged, until the
# deadline (a local clock check after each statement: bounded however slow the moves are).
my $seconds = 30;
my $deadline = $node->safe_psql('postgres', "SELECT (clock_timestamp() + interval '$seconds s')::text");
my @sessions;
for my $k (0 .. 3) {
    my $script = '';
    for my $i (0 .. 4999) {
        my $first = 1_000_000 * ($k + 1) + 8 * $i;
        my $last = $first + 7;
        $script .= "INSERT INTO users SELECT g, 's$k', $i FROM generate_series($first, $last) g;\n"
          . "\\if :ERROR\n\\echo FAIL $first\n\\else\n\\echo OK $first\n\\endif\n"
          . "SELECT clock_timestamp() > '$deadline' AS done \\gset\n\\if :done\n\\q\n\\endif\n";
    }
    # A file, not a pipe: the session quits at the deadline without reading the rest.
    my $file = PostgreSQL::Test::Utils::tempdir() . "/session_$k.sql";
    PostgreSQL::Test::Utils::append_to_file($file, $script);
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-f', $file ],
        '>', \$out, '2>', \$err, IPC::Run::timeout($seconds + 180));
    push @sessions, { h => $h, out => \$out, err => \$err };
}

my @steps = ([qw(move default 1 1500 default_2)], [qw(move default 1 1500 default_1)],
    [qw(move default 1001 2600 default_1)], ['rebalance']);
my $moves = 0;
my $t0 = time();
while (time() - $t0 < $seconds - 2) {
    emu(@{ $steps[ $moves % @steps ] });
    $moves++;
}
$_->{h}->finish for @sessions;

my (%acked, @failed);
for my $s (@sessions) {
    for (split /\n/, ${ $s->{out} }) {
        if (/^OK (\d+)$/) { $acked{ $1 + $_ } = 1 for 0 .. 7; }
        elsif (/^FAIL (\d+)$/) { push @failed, $1; }
    }
}
my @errors = map { grep { /ERROR/ } split /\n/, ${ $_->{err} } } @sessions;
note("$moves moves and rebalances; " . scalar(keys %acked) . ' rows acknowledged, '
    . scalar(@failed) . ' statements failed');
cmp_ok($moves, '>=', 4, "buckets moved $moves times while the sessions wrote");
cmp_ok(scalar(keys %acked), '>', 400, 'the sessions had many INSERTs acknowledged meanwhile');
is(scalar(@failed), 0, 'no INSERT failed: a move is a delay, not an error')
  or diag(join("\n", @errors[0 .. ($#errors < 4 ? $#errors : 4)]));

# Every row as each master stores it, and whether that master's replicaset owns its bucket.
my %stored;
my @misplaced;
for my $master (qw(default_1_1 default_2_1)) {
    for (split /\n/, emu_private_psql($master,
            "SELECT id, _picoemu.owns('default', bucket_id) FROM _picoemu_local.users")) {
        my ($id, $owned) = split /\|/;
        $stored{$id}++;
        push @misplaced, "$id on $master" if $owned ne 't';
    }
}
my @lost = grep { !$stored{$_} } sort { $a <=> $b } keys %acked;
my @twice = grep { $stored{$_} > 1 } sort { $a <=> $b } keys %stored;
is(scalar(@lost), 0, 'every acknowledged row is stored') or diag("lost: @lost[0 .. ($#lost < 9 ? $#lost : 9)]");
is(scalar(@twice), 0, 'no row is stored twice') or diag("twice: @twice[0 .. ($#twice < 9 ? $#twice : 9)]");
is(scalar(@misplaced), 0, 'every row is stored by the owner of its bucket')
  or diag("@misplaced[0 .. ($#misplaced < 9 ? $#misplaced : 9)]");
is($node->safe_psql('postgres', 'SELECT count(*) FROM users'), scalar(keys %stored),
    'picoroute reads back every stored row once');

$node->stop;
done_testing();
