# The README's examples run as written against the emulated cluster: every ```sql block of the
# sections "Quick start" and "Applications, drivers and poolers", in order, in one session of a new
# database. The block that runs on Picodata as admin ("-- on Picodata") is done with the emulator's
# own commands (it has no DDL or ACL over its fronts): its CREATE TABLE becomes create-table, its
# grants on catalog tables become `picoemu grant`; its user exists already.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_audit start_emulator start_routing_node);

my $readme = slurp_file("$FindBin::RealBin/../../README.md");

# The ```sql blocks of the section whose heading starts with `title`.
sub sql_blocks {
    my ($title) = @_;
    my ($section) = $readme =~ /^(#+) \Q$title\E[^\n]*\n(.*?)(?=^#{1,2} )/ms ? ($2) : ();
    die "README: no section $title" unless defined $section;
    return $section =~ /^```sql\n(.*?)^```$/msg;
}

my @quick = sql_blocks('Quick start');
my @apps = sql_blocks('Applications, drivers and poolers');
ok(@quick >= 2, 'the quick start has its SQL blocks');
ok(@apps >= 1, 'the applications section has its SQL examples');

start_emulator(replicasets => 2, replication_factor => 1);
my ($picodata, @postgres) = @quick;
like($picodata, qr/^-- on Picodata/, 'the first block runs on Picodata');
# What the emulator does for the Picodata block.
for my $stmt (grep { /\S/ } split /;\s*\n/, $picodata) {
    $stmt =~ s/^--[^\n]*\n//mg;
    next if $stmt !~ /\S/;
    if ($stmt =~ /^CREATE USER (\w+)/) {
        next;    # the emulator's user picoroute exists
    } elsif ($stmt =~ /^GRANT READ ON TABLE (_pico_\w+) TO (\w+)$/) {
        emu('grant', $1, '--user', $2);
    } elsif ($stmt =~ /^GRANT (?:READ|WRITE) ON TABLE \w+ TO \w+$/) {
        next;    # the emulator's users may read and write every user table
    } elsif ($stmt =~ /^CREATE TABLE (\w+) \((.*), PRIMARY KEY \((\w+)\)\) DISTRIBUTED BY \((\w+)\)$/) {
        my ($table, $cols, $pk, $key) = ($1, $2, $3, $4);
        my %type = (INTEGER => 'int8', TEXT => 'text');
        $cols =~ s/\b(INTEGER|TEXT)\b/$type{$1}/g;
        $cols =~ s/NOT NULL/not null/g;
        emu('create-table', $table, '--columns', $cols, '--primary-key', $pk, '--sharding-key', $key);
    } else {
        fail("no emulator equivalent for the README's Picodata statement: $stmt");
    }
}

my $node = start_routing_node(name => 'readme');
$node->safe_psql('postgres', 'CREATE DATABASE quick');
my $script = join("\n", @postgres, @apps);
my ($ret, $out, $err) = $node->psql('quick', $script, on_error_stop => 1);
is($ret, 0, 'the README\'s SQL runs as written') or diag("$err\n--- script:\n$script");
like($out, qr/^Ann$/m, 'the first routed query finds its row');
like($out, qr/Routing: bucket 1934 -> 127\.0\.0\.1:\d+ \(master \S+ of replicaset \S+\)/,
    'EXPLAIN names the bucket, the instance and its replicaset, as the README shows');
like($readme, qr/Routing: bucket 1934 -> 10\.0\.0\.2:4327 \(master i2 of replicaset r2\)/,
    'the README shows the same bucket');
is($node->safe_psql('quick', 'SELECT count(*) FROM users'), '8',
    'the examples stored their rows');
is_deeply([ map { $_->{statement} } @{ emu_audit() } ], [], 'the Picodata fronts refused no statement');
done_testing();
