# Applications written for PostgreSQL run unchanged against picoroute foreign tables: small programs
# with real drivers (psycopg 3 and pgjdbc, test/drivers/) insert with RETURNING, prepare statements
# past the generic plan, and catch Picodata's errors by PostgreSQL's SQLSTATEs, which picoroute maps
# from Picodata's texts (core/routing/sqlstate_map.h) as the emulator's fronts send them.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster qw(emu emu_audit emu_audit_clear start_emulator start_routing_node
  create_servers);

my $root = "$FindBin::RealBin/../..";
my $jar = '/usr/share/java/postgresql.jar';    # libpostgresql-jdbc-java

start_emulator(replicasets => 2, replication_factor => 1);
emu('create-table', 'app_users', '--columns', 'id int8, name text not null, score int8');
my $node = start_routing_node(name => 'drivers', extra_conf => "listen_addresses = '127.0.0.1'\n");
create_servers($node, 'pico');
$node->safe_psql('postgres', q{
CREATE FOREIGN TABLE app_users (id bigint, name text, score bigint DEFAULT 7)
  SERVER pico OPTIONS (sharding_key 'id');
});
my $user = $node->safe_psql('postgres', 'SELECT current_user');

# Runs a driver program; each "ok ..." / "not ok ..." line it prints is one test.
sub run_program {
    my ($name, @cmd) = @_;
    my ($out, $err) = ('', '');
    IPC::Run::run(\@cmd, '>', \$out, '2>', \$err, IPC::Run::timeout(180));
    my $rc = $? >> 8;
    my @lines = grep { /^(not )?ok / } split /\n/, $out;
    ok(scalar(@lines) > 0, "$name printed its checks") or diag("$out\n$err");
    for my $line (@lines) {
        ok($line =~ /^ok /, "$name: $line");
    }
    is($rc, 0, "$name exited 0") or diag($err);
    return;
}

# Debian's interpreter, which python3-psycopg installs into.
my $python = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';
run_program('psycopg 3', $python, "$root/test/drivers/psycopg_app.py",
    "host=127.0.0.1 port=" . $node->port . " dbname=postgres user=$user");

{
    my $classes = tempdir(CLEANUP => 1);
    system('javac', '-d', $classes, "$root/test/drivers/JdbcApp.java") == 0
      or BAIL_OUT('JdbcApp.java does not compile (default-jdk-headless, scripts/install-deps.sh)');
    run_program('pgjdbc', 'java', '-cp', "$jar:$classes", 'JdbcApp',
        "jdbc:postgresql://127.0.0.1:" . $node->port . "/postgres", $user);
}

# The fronts refused one statement on purpose (SELEKT, a parse error): every other failure was the
# cluster's own answer, not a dialect refusal.
my @refused = map { $_->{statement} } @{ emu_audit() };
is_deeply(\@refused, ['SELEKT 1'], 'the Picodata fronts refused only the statement meant to fail')
  or diag(explain(\@refused));
emu_audit_clear();
done_testing();
