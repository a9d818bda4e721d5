# The emulator's Picodata fronts seen through picoroute: a statement Picodata's grammar refuses and a
# read over sql_motion_row_max come back with Picodata's SQLSTATE and text, are recorded in the audit
# with the client that sent them, and OPTION (...) lifts the limit. This file sends refused statements
# on purpose, checks them in the audit, then clears it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_audit emu_audit_clear emu_json emu_private_psql start_emulator start_picoroute_node wait_for);

start_emulator(replicasets => 2, replication_factor => 1);
emu('create-table', 'big', '--columns', 'id int8, name text');
emu('load', 'big', '--rows', '6000');
my $node = start_picoroute_node(name => 'front', conninfo => emu('conninfo', '--user', 'picoroute'),
    refresh_interval => '300ms');
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 20), 'map loaded');

my ($ret, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SELECT * FROM picoroute_exec('default', 1, 'SELECT id FROM big WHERE name NOT LIKE ''x%''') AS t(id bigint)});
like($err, qr/ERROR:  XX000: sbroad: rule parsing error: NOT LIKE/,
     'a refused statement: XX000 sbroad: rule parsing error');
($ret, $out, $err) = $node->psql('postgres', q{
\set VERBOSITY verbose
SELECT count(*) FROM picoroute_exec('default', 1, 'SELECT id FROM big') AS t(id bigint)});
# Behind traft's "sbroad: "; from 26.2.1-rc1 tagged: "sbroad: Query 1 from EXPLAIN (RAW): Exceeded ...".
like($err, qr/ERROR:  XX000: sbroad: (?:Query 1 from EXPLAIN \(RAW\): )?Exceeded maximum number of rows \(5000\) in virtual table: 5001/,
     'a keyless read of 6000 rows: Picodata\'s row limit');
is($node->safe_psql('postgres',
    q{SELECT count(*) FROM picoroute_exec('default', 1, 'SELECT id FROM big OPTION (sql_motion_row_max = 0)') AS t(id bigint)}),
   '6000', 'OPTION (sql_motion_row_max = 0) lifts it');

my $refused = emu_audit();
is(scalar(@$refused), 2, 'the audit holds the two refusals');
is_deeply([ map { $_->{kind} } @$refused ], [ 'dialect', 'limit' ], 'their kinds');
like($refused->[0]{statement}, qr/NOT LIKE/, 'the refused statement text');
is($refused->[0]{user}, 'picoroute', 'the client user');
ok($refused->[0]{peer} =~ /^127\.0\.0\.1:\d+$/, 'the client address');
emu_audit_clear();
is(scalar(@{ emu_audit() }), 0, 'cleared');

# Inspection with PostgreSQL-only SQL goes to the private port.
is(emu_private_psql('default_1_1', 'SELECT pg_is_in_recovery()'), 'f', 'private port: PostgreSQL SQL');

$node->stop;
done_testing();
