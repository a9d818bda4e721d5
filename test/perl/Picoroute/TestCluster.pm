# Helpers for the multi-node TAP tests: an emulated Picodata cluster (test/emulator/picoemu) and a
# PostgreSQL node with picoroute preloaded, pointed at it.
package Picoroute::TestCluster;

use strict;
use warnings;
use Exporter 'import';
use File::Basename qw(dirname);
use File::Spec;
use JSON::PP;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Test2::API qw(test2_add_callback_testing_done);

our @EXPORT_OK = qw(emu emu_command emu_json emu_audit emu_audit_clear emu_private_psql emu_table
  start_emulator start_picoroute_node start_routing_node create_servers create_foreign_tables wait_for
  exec_options picodata_version picodata_has picodata_release_with free_port_range start_fake_instance fake_log
  emu_counters counters_moved create_pgbench_tables define_move_at coordinator_session emu_locate);

my $root = File::Spec->rel2abs(dirname(__FILE__) . '/../../..');

# PostgreSQL::Test::Cluster runs pg_regress --config-auth; outside a source tree, take PGXS's copy,
# and the server binaries of the same installation.
BEGIN {
    my $pgxs = `pg_config --pgxs`;
    chomp $pgxs;
    (my $pgxs_root = $pgxs) =~ s{/src/makefiles/pgxs\.mk$}{};
    $ENV{PG_REGRESS} //= "$pgxs_root/src/test/regress/pg_regress";
    my $bindir = `pg_config --bindir`;
    chomp $bindir;
    $ENV{PATH} = "$bindir:$ENV{PATH}" unless index($ENV{PATH}, $bindir) == 0;
}
my $emulator = "$root/test/emulator/picoemu";

# The base port of a free range of ports on 127.0.0.1, reserved for this test file until it exits
# (test/tools/port_range.py: a random free range, a reservation file holding this process's pid, as
# PostgreSQL::Test::Cluster does for its nodes' ports). An emulated cluster uses the range from its
# base port; ports base+100 to base+199 are left for the test's own servers.
sub free_port_range {
    my $base = `python3 '$root/test/tools/port_range.py' --pid $$`;
    die "test/tools/port_range.py found no free port range\n" if $? != 0 || $base !~ /^(\d+)$/;
    return $1;
}

# Server options for picoroute servers of the emulated cluster: the instances' Picodata fronts parse
# Picodata's trailing OPTION (...) clause and its startup options, so picoroute sends them
# (execution_options 'on', its default). PICOROUTE_EXEC_OPTIONS=off tests the other path.
sub exec_options {
    return "execution_options '" . ($ENV{PICOROUTE_EXEC_OPTIONS} // 'on') . "'";
}
my ($emu_dir, $emu_port);

# The emulated Picodata build: PICOROUTE_PICODATA_VERSION (a release, as `picoemu versions` lists
# them: 25.5.10, 26.1.6, 26.2.1-rc1, 26.2.1-rc2), else the emulator's default (the newest). A test
# file run under a name ending in .picodata-VERSION.pl (a link test/run_all.sh makes, so that one
# `prove -j` runs the version-dependent files on several builds) emulates that VERSION. Tests whose
# expectations differ by version ask picodata_has(), never the build's name.
my $picodata_version =
  $0 =~ /\.picodata-([0-9a-z.-]+)\.pl$/ ? $1 : $ENV{PICOROUTE_PICODATA_VERSION} // '';
my %capabilities;

sub picodata_version { return $picodata_version; }

# Whether the emulated build has a capability, named as in src/core/capabilities.json
# (prune_by_bucket_id, forward, stmt_invalidation, read_preference, local_execution,
# integral_double_hash, dnf_chain_limit, switchover_refusal, unlogged_tables, concat_below_additive,
# empty_set_aggregate), as `picoemu status --json` reports it.
sub picodata_has {
    my ($cap) = @_;
    die "unknown capability $cap" unless exists $capabilities{$cap};
    return $capabilities{$cap} ? 1 : 0;
}

# A release the emulator emulates whose capabilities are as asked (name => 1 or 0, every one), the
# newest such: for a server option picodata_version that must give picoroute those capabilities
# whatever the emulated build (picodata_release_with(prune_by_bucket_id => 1) for scatter 'masters').
# Dies when no emulated release fits.
my $emulated_builds;

sub picodata_release_with {
    my (%want) = @_;
    if (!$emulated_builds) {
        my ($stdout, $stderr);
        IPC::Run::run([ $emulator, 'versions', '--json' ], '>', \$stdout, '2>', \$stderr)
          or die "picoemu versions failed: $stderr";
        $emulated_builds = decode_json($stdout);
    }
    for my $build (reverse @{ $emulated_builds->{ascending} }) {
        my $caps = $emulated_builds->{builds}{$build}{capabilities};
        return $build
          unless grep { !exists $caps->{$_} || ($caps->{$_} ? 1 : 0) != ($want{$_} ? 1 : 0) } keys %want;
    }
    die 'no emulated release with ' . join(', ', map { "$_ => $want{$_}" } sort keys %want);
}

# The command line of a picoemu command for this test file's cluster (for IPC::Run::start).
sub emu_command {
    return [ $emulator, '--dir', $emu_dir, '--base-port', $emu_port, @_ ];
}

# Runs a picoemu command for this test file's cluster; dies with its output on failure.
sub emu {
    my @args = @_;
    my ($stdout, $stderr);
    my $ok = IPC::Run::run(emu_command(@args), '>', \$stdout, '2>', \$stderr);
    die "picoemu @args failed:\n$stdout\n$stderr" unless $ok;
    chomp $stdout;
    return $stdout;
}

sub emu_json { return decode_json(emu(@_)); }

# Creates a table on the emulated cluster: `columns` as picoemu create-table takes them, `args` more
# create-table arguments (--primary-key, --sharding-key, --global, --tier), and with rows => N,
# N generated rows loaded (picoemu load).
sub emu_table {
    my ($name, $columns, %opts) = @_;
    emu('create-table', $name, '--columns', $columns, @{ $opts{args} // [] });
    emu('load', $name, '--rows', $opts{rows}) if $opts{rows};
    return;
}

# Where the sharding keys `keys` (JSON arrays, e.g. "[5]") of `table` live: one picoemu locate for
# all of them; a list of its answers ({bucket_id, replicaset, master, port, private_port}), in order.
sub emu_locate {
    my ($table, @keys) = @_;
    my $found = emu_json('locate', $table, map { ('--key', $_) } @keys);
    return ref($found) eq 'ARRAY' ? @$found : ($found);
}

# The storage counters of `table` on every instance (seq_scan, idx_scan, n_tup_ins, n_tup_upd,
# n_tup_del), by instance name: two readings that differ name the instances a statement touched.
sub emu_counters {
    my ($table) = @_;
    my $c = emu_json('counters', $table, '--json');
    my %sum;
    for my $inst (keys %$c) {
        my $t = $c->{$inst}{$table} or next;
        $sum{$inst} = join(',', map { $t->{$_} // 0 } qw(seq_scan idx_scan n_tup_ins n_tup_upd n_tup_del));
    }
    return \%sum;
}

# The instances whose counters differ between two readings of emu_counters, sorted.
sub counters_moved {
    my ($before, $after) = @_;
    return [ sort grep { ($before->{$_} // '') ne ($after->{$_} // '') } keys %$after ];
}

# The statements the emulator's fronts refused (Picodata's dialect, row limits, parameter rules), as a
# list of hashes (instance, kind, sqlstate, message, statement, user, application_name, peer).
sub emu_audit {
    my ($stdout, $stderr);
    IPC::Run::run(emu_command('audit', '--json'), '>', \$stdout, '2>', \$stderr);
    return decode_json($stdout || '[]');
}

# Forgets the refused statements (for a test that sends refused statements on purpose: check them
# with emu_audit first).
sub emu_audit_clear { emu('audit', '--clear'); return; }

# Runs SQL on an instance's private PostgreSQL port, bypassing its Picodata front: for inspection that
# needs PostgreSQL-only SQL (pg_is_in_recovery(), _picoemu_local.*, pg_stat_*). Returns psql -At output.
sub emu_private_psql {
    my ($instance, $sql) = @_;
    return emu('psql', $instance, '--', '-At', '-v', 'ON_ERROR_STOP=1', '-c', $sql);
}

# Every test file that starts an emulator ends by asserting that the fronts refused nothing: a
# statement picoroute sends that Picodata would not parse fails the suite that sent it. A read that
# picoroute bounded itself (OPTION (sql_motion_row_max = N), N > 0) and that exceeded its bound is
# not a refusal of picoroute's SQL: picoroute reads it again in chunks of buckets, or reports the
# error to the client (059_bounded_reads.pl checks both). The text follows "sbroad: ", and from
# 26.2.1-rc1 a prefix naming the query of the plan that hit the limit.
sub bounded_read_over_its_bound {
    my ($r) = @_;
    return $r->{sqlstate} eq 'XX000'
      && $r->{message} =~ /^sbroad: (?:Query \d+ from EXPLAIN \(RAW\): )?Exceeded maximum number of rows \((\d+)\)/
      && $1 > 0 && $r->{statement} =~ /OPTION \(sql_motion_row_max = $1\b/;
}
test2_add_callback_testing_done(sub {
    return unless defined $emu_dir && -d $emu_dir;
    my $refused = eval { emu_audit() };
    if (!defined $refused) {
        fail("the emulator's audit can be read: $@");
        return;
    }
    $refused = [ grep { !bounded_read_over_its_bound($_) } @$refused ];
    ok(!@$refused, 'the Picodata fronts refused no statement (picoemu audit)')
      or diag(join("\n", map { "refused on $_->{instance} ($_->{kind} $_->{sqlstate}, app "
              . ($_->{application_name} // '') . "): $_->{message}\n    $_->{statement}" } @$refused));
});

# Starts an emulated cluster in a directory of its own, on a free port range (free_port_range; a
# base_port option is ignored: fixed ports collide when runs share a machine); `down` runs at exit.
sub start_emulator {
    my (%opts) = @_;
    # A statement that a stopped master stalls waits this long in the emulated instances (Picodata:
    # 360 s, which no setting changes; PICOEMU_QUERY_TIMEOUT is the emulator's knob): no test waits
    # for minutes. A test may set its own before it starts the emulator.
    $ENV{PICOEMU_QUERY_TIMEOUT} //= 20;
    $emu_port = free_port_range();
    note("emulator base port $emu_port");
    $emu_dir = PostgreSQL::Test::Utils::tempdir('picoemu');
    my @up = ('up');
    push @up, '--replicasets', $opts{replicasets} if $opts{replicasets};
    push @up, '--replication-factor', $opts{replication_factor} if $opts{replication_factor};
    push @up, '--bucket-count', $opts{bucket_count} if $opts{bucket_count};
    push @up, map { ('--tier', $_) } @{ $opts{tiers} // [] };
    my $version = $opts{picodata} // $picodata_version;
    push @up, '--picodata', $version if $version ne '';
    push @up, '--wrong-hash', $opts{wrong_hash} if $opts{wrong_hash};
    emu(@up);
    my $status = emu_json('status', '--json');
    $picodata_version = $status->{picodata_version};
    %capabilities = %{ $status->{capabilities} };
    note("emulated Picodata build: $picodata_version (capabilities: "
          . join(', ', grep { $capabilities{$_} } sort keys %capabilities) . ')');
    return $emu_dir;
}

END {
    if (defined $emu_dir) {
        local $?;
        eval { emu('down') };
    }
}

# Starts test/emulator/fake_instance.py (a misbehaving instance on 127.0.0.1, a port of its own) with
# `args` (its --rule, --rules-file, --refuse-login ...), logging to a file of a new temporary
# directory. Returns { port, log, dir, pid }; it is stopped at exit (and ends by itself after 300 s).
# Started without a pipe: closing one would wait for the instance to end.
my @fake_pids;
sub start_fake_instance {
    my (@args) = @_;
    my $dir = PostgreSQL::Test::Utils::tempdir('fake_instance');
    my ($log, $port_file) = ("$dir/fake.jsonl", "$dir/port");
    my $pid = fork() // die "cannot fork: $!";
    if ($pid == 0) {
        exec('python3', "$root/test/emulator/fake_instance.py", '--log', $log, '--port-file',
            $port_file, '--lifetime', '300', @args)
          or POSIX::_exit(127);
    }
    push @fake_pids, $pid;
    for (1 .. 200) {
        last if -s $port_file;
        select(undef, undef, undef, 0.05);
    }
    my $port = -s $port_file ? PostgreSQL::Test::Utils::slurp_file($port_file) : '';
    chomp $port;
    die "the fake instance did not start" unless $port =~ /^\d+$/;
    note("fake instance on 127.0.0.1:$port");
    return { port => $port, log => $log, dir => $dir, pid => $pid };
}

# The entries a fake instance logged so far (logins, statements), as a list of hashes.
sub fake_log {
    my ($fake) = @_;
    return [] unless -e $fake->{log};
    open(my $in, '<', $fake->{log}) or die $!;
    my @entries = map { decode_json($_) } grep { /\S/ } <$in>;
    close $in;
    return \@entries;
}

END { local $?; kill 'TERM', @fake_pids if @fake_pids; }

# A PostgreSQL node preloading picoroute, polling the emulated cluster.
sub start_picoroute_node {
    my (%opts) = @_;
    my $conninfo = $opts{conninfo} // emu('conninfo', '--user', 'picoroute');
    my $node = PostgreSQL::Test::Cluster->new($opts{name} // 'picoroute');
    $node->init;
    my $interval = $opts{refresh_interval} // '500ms';
    $node->append_conf('postgresql.conf', <<"CONF");
shared_preload_libraries = 'picoroute'
picoroute.conninfo = '$conninfo'
picoroute.refresh_interval = '$interval'
picoroute.connect_timeout = '2s'
picoroute.check_plans = on
CONF
    $node->append_conf('postgresql.conf', $opts{extra_conf}) if $opts{extra_conf};
    $node->start;
    $node->safe_psql('postgres', 'CREATE EXTENSION picoroute');
    return $node;
}

# start_picoroute_node, then one test: the map of tier default has its two bucket ranges within
# map_timeout seconds (default 10). admin => 1 polls the cluster as its admin user.
sub start_routing_node {
    my (%opts) = @_;
    my $admin = delete $opts{admin};
    my $timeout = delete $opts{map_timeout} // 10;
    $opts{conninfo} //= emu('conninfo', '--user', 'admin') if $admin;
    my $node = start_picoroute_node(%opts);
    ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '2', $timeout),
        'map loaded');
    return $node;
}

# The foreign servers the tests share, by name: their tier and their other options. All carry
# exec_options() but pico_on, which leaves execution_options at its default.
my %server_options = (
    pico       => [ 'default', '' ],
    pico_m     => [ 'default', "scatter 'masters', picodata_version '<prune_by_bucket_id>'" ],
    pico_r     => [ 'default', "read_preference 'replica'" ],
    pico_on    => [ 'default', '' ],
    pico_other => [ 'other',   '' ],
);

# Creates the named servers (see %server_options) on `node`, each with a user mapping of the current
# user to the cluster's user picoroute.
sub create_servers {
    my ($node, @names) = @_;
    my $sql = '';
    for my $name (@names) {
        my $server = $server_options{$name} or die "unknown server $name";
        my @options = ("tier '$server->[0]'", "dbname 'picodata'");
        # '<capability>': the newest emulated release with it (picodata_release_with)
        (my $extra = $server->[1]) =~ s/<(\w+)>/picodata_release_with($1 => 1)/ge;
        push @options, $extra if $extra ne '';
        push @options, exec_options() unless $name eq 'pico_on';
        $sql .= "CREATE SERVER $name FOREIGN DATA WRAPPER picoroute OPTIONS ("
          . join(', ', @options) . ");\n"
          . "CREATE USER MAPPING FOR CURRENT_USER SERVER $name"
          . " OPTIONS (user 'picoroute', password 'picoroute');\n";
    }
    $node->safe_psql('postgres', $sql);
    return;
}

# Declares the Picodata table `table` (with `columns`, sharded by `key`) on each of `servers`: on
# pico as `table`, on pico_X as `table_X`.
sub create_foreign_tables {
    my ($node, $table, $columns, $key, @servers) = @_;
    my $sql = '';
    for my $server (@servers) {
        (my $suffix = $server) =~ s/^pico//;
        $sql .= "CREATE FOREIGN TABLE $table$suffix ($columns) SERVER $server"
          . " OPTIONS (table_name '$table', sharding_key '$key');\n";
    }
    $node->safe_psql('postgres', $sql);
    return;
}

# A psql session of `node` whose keyless statements go to the coordinator at `address`
# (host:port): picoroute spreads sessions over the coordinators by process, so sessions are opened
# until EXPLAIN (VERBOSE) of `probe` names that address (at most 40). Returns a sub that runs SQL
# in the session and returns what psql printed, errors included; undef when no session got it.
# The session ends with the test.
sub coordinator_session {
    my ($node, $address, $probe) = @_;
    for (1 .. 40) {
        my ($in, $out) = ('', '');
        my $h = IPC::Run::start(
            [ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=0', '-d', $node->connstr('postgres') ],
            '<', \$in, '>', \$out, '2>', \$out, IPC::Run::timeout(300));
        my $n = 0;
        my $run = sub {
            my ($sql) = @_;
            $n++;
            $out = '';
            $in .= "$sql\n\\echo __done_${n}__\n";
            $h->pump until $out =~ /__done_${n}__/;
            (my $result = $out) =~ s/__done_${n}__\n?//;
            return $result;
        };
        return $run if $run->("EXPLAIN (VERBOSE, COSTS OFF) $probe;") =~ /\Q$address\E/;
        $in .= "\\q\n";
        $h->finish;
    }
    return undef;
}

# Polls `query` until it returns `expected` (default 't'), for at most `timeout` seconds.
# Defines move_at(ord int, at int) on `node`: returns ord, and when ord = at first runs the picoemu
# command `cmd` (a list, e.g. qw(move default 17 17 default_2)) from the server, then waits for a
# refreshed map. A join whose outer side calls it changes the topology while it runs. The server
# runs the command from its data directory: the emulator's directory is made absolute.
sub define_move_at {
    my ($node, @cmd) = @_;
    my @shell = @{ emu_command(@cmd) };
    $shell[2] = File::Spec->rel2abs($shell[2]);
    my $command = join(' ', @shell);
    $node->safe_psql('postgres', qq{
CREATE OR REPLACE FUNCTION move_at(ord int, at int) RETURNS int LANGUAGE plpgsql AS \$\$
BEGIN
  IF ord = at THEN
    COPY (SELECT 1) TO PROGRAM '$command >/dev/null';
    PERFORM picoroute_refresh();
  END IF;
  RETURN ord;
END \$\$;
});
    return;
}

# pgbench's four tables on the emulated cluster and as foreign tables of `server` on `node`, each
# sharded by its key; pgbench_history has a key of its own, hid (Picodata needs a primary key),
# which pgbench's built-in scripts do not fill (pgbench -i -I G leaves the table empty).
sub create_pgbench_tables {
    my ($node, $server) = @_;
    emu_table('pgbench_accounts', 'aid int4, bid int4, abalance int4, filler text');
    emu_table('pgbench_branches', 'bid int4, bbalance int4, filler text');
    emu_table('pgbench_tellers', 'tid int4, bid int4, tbalance int4, filler text');
    emu_table('pgbench_history', 'hid int8, tid int4, bid int4, aid int4, delta int4, mtime timestamptz');
    $node->safe_psql('postgres', <<"SQL");
CREATE FOREIGN TABLE pgbench_accounts (aid int, bid int, abalance int, filler char(84)) SERVER $server
  OPTIONS (sharding_key 'aid', batch_size '1000');
CREATE FOREIGN TABLE pgbench_branches (bid int, bbalance int, filler char(88)) SERVER $server
  OPTIONS (sharding_key 'bid');
CREATE FOREIGN TABLE pgbench_tellers (tid int, bid int, tbalance int, filler char(84)) SERVER $server
  OPTIONS (sharding_key 'tid');
CREATE FOREIGN TABLE pgbench_history (hid bigint, tid int, bid int, aid int, delta int,
  mtime timestamptz) SERVER $server OPTIONS (sharding_key 'hid');
SQL
    return;
}

sub wait_for {
    my ($node, $query, $expected, $timeout) = @_;
    $expected //= 't';
    $timeout //= 30;
    my $deadline = time() + $timeout;
    my $last;
    while (time() < $deadline) {
        # psql, not safe_psql: the server may be restarting (crash recovery) meanwhile.
        my ($ret, $stdout) = $node->psql('postgres', $query);
        $last = $ret == 0 ? $stdout : "(error $ret)";
        return 1 if $ret == 0 && $last eq $expected;
        select(undef, undef, undef, 0.2);
    }
    diag("wait_for timed out: $query\n  expected: $expected\n  last: $last");
    return 0;
}

1;
