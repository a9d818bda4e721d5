# Startup options Picodata cannot read: Picodata closes the connection with no ErrorResponse
# (src/pgproto/client.rs:40, every release), as the emulator's fronts do. picoroute must then say so
# clearly, without blaming the network and without trying again and again: picoroute_exec fails at
# once with a message that names the instance and the options, the worker's status tells the same,
# and once picoroute.conninfo is fixed everything works again. This file makes picoroute send such
# options on purpose, checks the fronts' audit (kind "startup"), then clears it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use Picoroute::TestCluster
  qw(emu emu_audit emu_audit_clear start_emulator start_picoroute_node wait_for);

start_emulator(replicasets => 2, replication_factor => 1);
emu('create-table', 'users', '--columns', 'id int8, name text');
emu('load', 'users', '--rows', '10');
my $conninfo = emu('conninfo', '--user', 'admin');
my $node = start_picoroute_node(name => 'startup', conninfo => $conninfo, refresh_interval => '300ms');
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 20), 'map loaded');
my $exec = q{SELECT * FROM picoroute_exec('default', 1, 'SELECT name FROM users WHERE id = 1') AS t(name text)};
is($node->safe_psql('postgres', $exec), 'name_1', 'picoroute_exec runs with good options');

# An item without '=': Picodata's ClientParams::new fails ("option without value") and the
# connection is closed unanswered.
sub set_conninfo {
    my ($value) = @_;
    (my $quoted = $value) =~ s/'/''/g;
    $node->safe_psql('postgres', "ALTER SYSTEM SET picoroute.conninfo = '$quoted'");
    $node->reload;
    return;
}
set_conninfo("$conninfo options=sql_motion_row_max");
# picoroute_exec's connections of this session were opened with the old options: a new session.
my $t0 = time;
my ($ret, $out, $err) = $node->psql('postgres', $exec);
my $took = time - $t0;
isnt($ret, 0, 'picoroute_exec fails when the instance closes the connection at startup');
like($err, qr/closed the connection at startup without an answer/, 'the error says what happened')
  or diag($err);
like($err, qr/options/, 'the error points at the startup options') or diag($err);
unlike($err, qr/could not (?:reach|connect to any)|unreachable|not running/i,
       'and does not blame the network or the cluster') or diag($err);
cmp_ok($took, '<', 10, sprintf('it fails at once (%.1f s), without trying again and again', $took));

# The worker polls with the same options: its status says why it cannot read the catalog.
ok(wait_for($node, q{SELECT last_error LIKE '%closed the connection at startup without an answer%'
                     FROM picoroute_status}, 't', 20),
   'the worker reports the closed connection in picoroute_status.last_error')
  or diag($node->safe_psql('postgres', 'SELECT last_error FROM picoroute_status'));

my @startup = grep { $_->{kind} eq 'startup' } @{ emu_audit() };
ok(scalar(@startup) > 0, 'the fronts recorded the refused startups (kind startup)');
like($startup[0]{message} // '', qr/option without value/, "with Picodata's reason: option without value");
is($startup[0]{statement} // '', 'options=sql_motion_row_max', 'and the options that were sent');

# Fixed, everything works again: the worker reads the catalog, picoroute_exec runs.
set_conninfo($conninfo);
ok(wait_for($node, 'SELECT last_error IS NULL FROM picoroute_status', 't', 20), 'the worker recovers')
  or diag($node->safe_psql('postgres', 'SELECT last_error FROM picoroute_status'));
is($node->safe_psql('postgres', $exec), 'name_1', 'picoroute_exec runs again');

emu_audit_clear();
done_testing();
