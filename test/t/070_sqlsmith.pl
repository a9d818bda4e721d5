# A bounded sqlsmith run against a node whose picoroute foreign tables were imported from an
# emulated cluster: random queries (scans, joins, subqueries, parameters, writes, cancels by
# statement_timeout) must never crash a backend. The seed is printed; a failing run names it, and
# PICOROUTE_SQLSMITH_SEED / PICOROUTE_SQLSMITH_QUERIES replay or lengthen a run.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Picoroute::TestCluster qw(emu start_emulator start_picoroute_node wait_for exec_options);

my $xo = exec_options();    # the emulator's instances parse no Picodata OPTION clause

my ($sqlsmith) = grep { -x } map { "$_/sqlsmith" } split /:/, $ENV{PATH};
plan skip_all => 'sqlsmith is not installed (scripts/install-deps.sh installs it)' unless $sqlsmith;

my $seed = $ENV{PICOROUTE_SQLSMITH_SEED} // (time() % 100000);
my $queries = $ENV{PICOROUTE_SQLSMITH_QUERIES} // 20000;
my $time_limit = $ENV{PICOROUTE_SQLSMITH_SECONDS} // 90;
diag("sqlsmith seed $seed, at most $queries queries, at most $time_limit s "
   . "(replay: PICOROUTE_SQLSMITH_SEED=$seed)");

start_emulator();
emu('create-table', 'users', '--columns', 'id int8, name text, v int8');
emu('load', 'users', '--rows', '300');
emu('create-table', 'pairs', '--columns', 'a text, b int8, note text', '--primary-key', 'a,b');
emu('insert', 'pairs', '--values', q{["lol", 5, "five"]}, '--values', q{["kek", 7, "seven"]});
emu('create-table', 'typed',
    '--columns', 'id int4, u uuid, f float8, n numeric(12,2), flag bool, s varchar(20), t timestamptz, small int2',
    '--primary-key', 'id');
emu('load', 'typed', '--rows', '200');
emu('create-table', 'nk', '--columns', 'id int8, k text, v int8', '--primary-key', 'id', '--sharding-key', 'k');
emu('insert', 'nk', '--values', q{[1, null, 10]}, '--values', q{[2, "a", 20]});
emu('create-table', 'settings', '--columns', 'name text, value text', '--global');
emu('insert', 'settings', '--values', q{["mode", "test"]});

my $node = start_picoroute_node(name => 'smith', refresh_interval => '500ms');
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', 20), 'map loaded');
$node->safe_psql('postgres', qq{
CREATE ROLE smith LOGIN PASSWORD 'smith';
CREATE SCHEMA pico AUTHORIZATION smith;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata', $xo);
CREATE SERVER pico_m FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata', scatter 'masters', $xo);
GRANT USAGE ON FOREIGN SERVER pico, pico_m TO smith;
CREATE USER MAPPING FOR smith SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE USER MAPPING FOR smith SERVER pico_m OPTIONS (user 'picoroute', password 'picoroute');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
IMPORT FOREIGN SCHEMA picodata FROM SERVER pico INTO pico;
CREATE FOREIGN TABLE pico.users_m (id bigint, name text, v bigint) SERVER pico_m
  OPTIONS (table_name 'users', sharding_key 'id');
CREATE TABLE pico.local_ids (id bigint, k text);
INSERT INTO pico.local_ids SELECT g, 'key' || g FROM generate_series(1, 20) g;
GRANT ALL ON ALL TABLES IN SCHEMA pico TO smith;
ALTER ROLE smith SET search_path = pico;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM pico.users'), '300', 'imported tables answer');

my $connstr = 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres user=smith password=smith';
my $queries_log = $node->basedir . '/sqlsmith-queries.sql';
my ($stdout, $stderr) = ('', '');
my $started = time();
my $h = IPC::Run::start(
    [ $sqlsmith, "--target=$connstr", "--seed=$seed", "--max-queries=$queries", '--exclude-catalog',
      '--dump-all-queries', '--verbose' ],
    '>', $queries_log, '2>', \$stderr,
    IPC::Run::timeout($time_limit));
my $finished = eval { $h->finish; 1 };
if (!$finished) {
    $h->kill_kill;
    diag("sqlsmith stopped at the time limit ($time_limit s)");
}
# sqlsmith's own summary: the most frequent errors its queries met.
my @summary = grep { /^\s*\d+\s+\S/ } split /\n/, $stderr;
diag("sqlsmith error classes (count, message):\n" . join("\n", @summary[0 .. ($#summary < 15 ? $#summary : 15)]))
  if @summary;
my $elapsed = time() - $started;
diag("sqlsmith ran for $elapsed s; seed $seed");

my $log = slurp_file($node->logfile);
my @crashes = $log =~ /(server process \(PID \d+\) was terminated by signal[^\n]*)/g;
ok(!@crashes, "no backend crash (seed $seed)") or do {
    diag("crashes with sqlsmith seed $seed:\n" . join("\n", @crashes));
    diag("last queries before the crash:\n"
       . join('', (split /(?<=;\n)/, slurp_file($queries_log))[-5 .. -1]))
      if -s $queries_log;
};
unlike($stderr, qr/server closed the connection unexpectedly|terminating connection because of crash/,
       "sqlsmith never lost its connection to a crash (seed $seed)")
  or diag("sqlsmith stderr tail (seed $seed):\n" . substr($stderr, -3000));
is($node->safe_psql('postgres', 'SELECT count(*) FROM pico.users'), '300', "the server is still up and answers (seed $seed)");
my $generated = () = slurp_file($queries_log) =~ /;\n/g;
ok($generated > 0, "sqlsmith generated queries ($generated)");
diag("sqlsmith: $generated queries in $elapsed s, seed $seed");

$node->stop;
done_testing();
