# Routing that verifies itself. The emulated cluster is made deliberately wrong (picoemu up
# --wrong-hash double: it hashes double key values by the other release line's rule, 25.5's or
# 26.1's, where its rows are stored and in what its EXPLAIN says). picoroute asks the cluster to
# EXPLAIN a keyed statement before it routes keys of a table: for the float8-keyed table it finds
# the disagreement once (one WARNING naming the table, the key types, both buckets and the
# version; the view picoroute_route_checks says disagreed), sends that table's keyed statements
# through a coordinator (reads, writes, prepared statements, lookups per outer row, INSERT rows),
# and every read and write by key returns or changes the right rows. The same float8 table through
# a server whose picodata_version option names a release of the cluster's real rule, and an
# int8-keyed table, agree (both samples of a double, 1 and 1.5, whichever line): no warning,
# routed to the owners. picoroute.route_check = off routes by picoroute's bucket unchecked. On a
# push-mode node (versions told by picoroute_apply_events) with room for two verdicts: a third
# table finds the table full (a WARNING naming the setting; routed unchecked), and a change of the
# detected version makes the tables be checked again, the old version's entries making room.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Picoroute::TestCluster
  qw(emu emu_json emu_private_psql emu_table start_emulator start_picoroute_node exec_options
  wait_for picodata_has picodata_release_with);

start_emulator(replicasets => 3, replication_factor => 1, wrong_hash => 'double');
my $status = emu_json('status', '--json');
is($status->{wrong_hash}, 'double', 'the emulated cluster hashes doubles by the other rule');
my $release = $status->{picodata_version};
emu_table('fl', 'f float8, v text');
emu_table('il', 'id int8, v text');

my $node = start_picoroute_node(name => 'route_check', refresh_interval => '300ms');
ok(wait_for($node, "SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'", '3', 10), 'map loaded');
ok(wait_for($node, 'SELECT picodata_version FROM picoroute_status', $release, 10), "version $release detected");

# picoroute hashes doubles by the detected version's rule; the cluster by the other one.
my $integral = picodata_has('integral_double_hash');
my ($rule, $cluster_rule) = $integral ? ('26.1', '25.5') : ('25.5', '26.1');
# A picodata_version option naming a release of the cluster's real rule.
my $other = picodata_release_with(integral_double_hash => !$integral);
my $xo = exec_options();
$node->safe_psql('postgres', qq{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (dbname 'picodata', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE fl (f float8, v text) SERVER pico OPTIONS (sharding_key 'f');
CREATE FOREIGN TABLE il (id bigint, v text) SERVER pico OPTIONS (sharding_key 'id');
CREATE SERVER pico_o FOREIGN DATA WRAPPER picoroute
  OPTIONS (dbname 'picodata', picodata_version '$other', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_o OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE fl_o (f float8, v text) SERVER pico_o OPTIONS (table_name 'fl', sharding_key 'f');
CREATE TABLE keys (f float8);
INSERT INTO keys VALUES (1.0), (-3.0), (1.5);
});

sub bucket_of {
    my ($key, $r) = @_;
    my $out = `python3 $FindBin::RealBin/../tools/bucket_hash_reference.py --rule $r double:$key`;
    chomp $out;
    return $out;
}
my ($ours, $theirs) = (bucket_of('1', $rule), bucket_of('1', $cluster_rule));
isnt($ours, $theirs, "key 1.0: picoroute's bucket $ours, the cluster's $theirs");
my ($ours15, $theirs15) = (bucket_of('1.5', $rule), bucket_of('1.5', $cluster_rule));
isnt($ours15, $theirs15, "key 1.5: picoroute's bucket $ours15, the cluster's $theirs15 (no cb header on 26.1)");

# Where the storages hold the row of key $key ("bucket_id@master|v"), read around picoroute.
sub stored {
    my ($key) = @_;
    my @found;
    for my $rs (@{ emu_json('status', '--json')->{replicasets} }) {
        my $row = emu_private_psql($rs->{master},
            "SELECT bucket_id || '\@$rs->{master}|' || v FROM _picoemu_local.fl WHERE f = '$key'::float8");
        push @found, $row if $row ne '';
    }
    return join(',', @found);
}

sub warnings_in_log {
    my $log = slurp_file($node->logfile);
    my @w = $log =~ /WARNING:  picoroute: Picodata \S+ hashes the sharding key \(double\) of foreign table public\.fl differently/g;
    return scalar @w;
}

# ---- detection: the first keyed statement checks, one WARNING ----------------------------------------
my ($ret, $out, $err) = $node->psql('postgres', "SELECT v FROM fl WHERE f = 1.0");
is($ret, 0, 'the first keyed read of fl succeeds');
like($err, qr/WARNING:  picoroute: Picodata \Q$release\E hashes the sharding key \(double\) of foreign table public\.fl differently from picoroute/,
    'one WARNING names the table, the key types and the version');
like($err, qr/DETAIL:  Key \(1\): Picodata's bucket $theirs \(literal key: buckets = \[$theirs\]\), picoroute's bucket $ours \(hashed by the rule of Picodata $rule\)\./,
    "its DETAIL gives both buckets ($theirs, $ours)");
is($node->safe_psql('postgres', q{
SELECT key_types || '|' || picodata_version || '|' || hash_rule || '|' || state || '|' || sample || '|'
       || picoroute_bucket || '|' || picodata_bucket || '|' || (checked_at IS NOT NULL)
FROM picoroute_route_checks WHERE foreign_table = 'public.fl'}),
   "double|$release|$rule|disagreed|(1)|$ours|$theirs|true", 'the view shows the disagreement');
($ret, $out, $err) = $node->psql('postgres', "SELECT v FROM fl WHERE f = 2.0; SELECT v FROM fl WHERE f = 1.5");
unlike($err, qr/WARNING/, 'another session finds the verdict: no second WARNING');

# ---- the fallback: keyed statements through a coordinator, right answers ----------------------------
my $i = 0;
for my $key ('1.0', '-3.0', '1.5') {
    $i++;
    $node->safe_psql('postgres', "INSERT INTO fl VALUES ($key, 'v$i')");
    my $located = emu_json('locate', 'fl', '--key', "[$key]");
    is(stored($key), "$located->{bucket_id}\@$located->{master}|v$i",
       "key $key: the INSERT stored the row where the cluster hashes it (bucket $located->{bucket_id})");
    is($node->safe_psql('postgres', "SELECT v FROM fl WHERE f = $key"), "v$i", "key $key: read by key");
}
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM fl WHERE f = 1.0'),
     qr/Routing: Picodata hashes this sharding key differently \(picoroute_route_checks\): through coordinator 127\.0\.0\.1:\d+, which routes it by its own hashing/,
     'EXPLAIN: a keyed read goes through a coordinator');
like($node->safe_psql('postgres', 'EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF) DELETE FROM fl WHERE f = 42.0'),
     qr/Routing: Picodata hashes this sharding key differently/, 'EXPLAIN ANALYZE: so does a keyed DELETE');
like($node->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO fl VALUES (7.0, 'x')"),
     qr/Routing: Picodata hashes this sharding key differently \(picoroute_route_checks\): every row to one coordinator/,
     'EXPLAIN: INSERT rows go to one coordinator');
$node->safe_psql('postgres', "UPDATE fl SET v = 'u1' WHERE f = 1.0");
is(stored('1.0'), emu_json('locate', 'fl', '--key', '[1.0]')->{bucket_id} . '@'
   . emu_json('locate', 'fl', '--key', '[1.0]')->{master} . '|u1', 'UPDATE by key changed the stored row');
is($node->safe_psql('postgres', "DELETE FROM fl WHERE f = -3.0; SELECT count(*) FROM fl WHERE f = -3.0"), '0',
   'DELETE by key removed the row');
is(stored('-3.0'), '', 'and it is gone from the storages');
is($node->safe_psql('postgres', q{
PREPARE q(float8) AS SELECT v FROM fl WHERE f = $1;
EXECUTE q(1.0); EXECUTE q(1.5); EXECUTE q(1.0); EXECUTE q(1.5); EXECUTE q(1.0); EXECUTE q(1.5)}),
   "u1\nv3\nu1\nv3\nu1\nv3", 'a prepared statement by key (custom and generic plans)');
is($node->safe_psql('postgres', q{
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
SELECT string_agg(k.f || '=' || fl.v, ',' ORDER BY k.f) FROM keys k JOIN fl ON fl.f = k.f}),
   '1=u1,1.5=v3', 'a join by the key (lookups per outer row) finds the right rows');
like($node->safe_psql('postgres', q{
SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT k.f, fl.v FROM keys k JOIN fl ON fl.f = k.f}),
     qr/WHERE \("f" = \$1\).*Routing: Picodata hashes this sharding key differently/s,
     'the join looks fl up per outer row, each lookup through a coordinator');
is($node->safe_psql('postgres', "SELECT string_agg(v, ',' ORDER BY v) FROM fl WHERE f IN (1.0, 1.5, 9.0)"),
   'u1,v3', 'a key list reads the right rows');
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM fl WHERE f IN (1.0, 1.5, 9.0)'),
     qr/Routing: Picodata hashes this sharding key differently/, 'a key list goes through a coordinator');
is($node->safe_psql('postgres', 'SELECT count(*) FROM fl'), '2', 'two rows left');

# ---- agreement: no warning, routed to the owners -------------------------------------------------------
($ret, $out, $err) = $node->psql('postgres', "SELECT v FROM fl_o WHERE f = 1.0; SELECT v FROM il WHERE id = 1");
is($out, "u1", 'the same table through a server with the cluster\'s rule reads the row');
unlike($err, qr/WARNING/, 'agreement raises nothing');
is($node->safe_psql('postgres', q{
SELECT string_agg(foreign_table || ':' || key_types || ':' || hash_rule || ':' || state || ':'
                  || picoroute_bucket || ':' || picodata_bucket, ',' ORDER BY foreign_table)
FROM picoroute_route_checks WHERE foreign_table IN ('public.fl_o', 'public.il')}),
   "public.fl_o:double:$cluster_rule:agreed:$theirs:$theirs,public.il:integer:$rule:agreed:1934:1934",
   'the view shows both agreements');
my $owner = emu_json('locate', 'il', '--key', '[1]')->{port};
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM il WHERE id = 1'),
     qr/Routing: bucket 1934 -> 127\.0\.0\.1:$owner \(master \S+ of replicaset/, 'il: routed to the owner');
my $owner_fl = emu_json('locate', 'fl', '--key', '[1.0]')->{port};
like($node->safe_psql('postgres', 'EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM fl_o WHERE f = 1.0'),
     qr/Routing: bucket $theirs -> 127\.0\.0\.1:$owner_fl \(master \S+ of replicaset/, 'fl_o: routed to the owner');
is(warnings_in_log(), 1, 'the server log has the one WARNING');

# ---- the setting --------------------------------------------------------------------------------------
like($node->safe_psql('postgres', q{SET picoroute.route_check = off;
EXPLAIN (VERBOSE, COSTS OFF) SELECT v FROM fl WHERE f = 1.0}),
     qr/Routing: bucket $ours -> /, 'route_check = off: routed by picoroute\'s bucket');
$node->safe_psql('postgres', q{CREATE FOREIGN TABLE il2 (id bigint, v text) SERVER pico
  OPTIONS (table_name 'il', sharding_key 'id')});
is($node->safe_psql('postgres', q{SET picoroute.route_check = off; SELECT count(*) FROM il2 WHERE id = 1;
SELECT count(*) FROM picoroute_route_checks WHERE foreign_table = 'public.il2'}), "0\n0",
   'route_check = off: nothing checked, nothing recorded');

# ---- a full table of verdicts; a version change makes the tables be checked again (push mode) ------
# Two entries only. Versions with picoroute's own rule for doubles (the cluster's is the other).
my ($va, $vb) = $integral ? ('26.1.5', '26.1.6') : ('25.5.9', '25.5.10');
my $push = start_picoroute_node(name => 'route_check_push',
    extra_conf => "picoroute.source = 'push'\npicoroute.allowed_hosts = '127.0.0.1'\n"
      . "picoroute.max_route_checks = 2\n");
# The cluster's topology as notifications, every instance reporting `version`.
sub topology_events {
    my ($version) = @_;
    my $s = emu_json('status', '--json');
    my @e = map { qq({"op":"replace","map":"tier","name":"$_->{name}","bucket_count":$_->{bucket_count}}) } @{ $s->{tiers} };
    my %master = map { $_->{name} => $_->{master} } @{ $s->{replicasets} };
    my %uuid = map { $_->{name} => $_->{uuid} } @{ $s->{instances} };
    push @e, map { qq({"op":"replace","map":"replicaset","replicaset_uuid":"$_->{uuid}","tier":"$_->{tier}","current_master_uuid":"$uuid{$master{$_->{name}}}"}) } @{ $s->{replicasets} };
    push @e, map { qq({"op":"replace","map":"instance","instance_uuid":"$_->{uuid}","replicaset_uuid":"$_->{replicaset_uuid}","current_state":"Online","address":"127.0.0.1:$_->{port}","picodata_version":"$version"}) } @{ $s->{instances} };
    for my $t (@{ $s->{tiers} }) {
        push @e, map { qq({"op":"replace","map":"bucket","tier":"$t->{name}","bucket_id":{"start":$_->{start},"end":$_->{end}},"current_replicaset_uuid":"$_->{replicaset_uuid}"}) } @{ $t->{buckets} };
    }
    return '[' . join(',', @e) . ']';
}
sub push_checks {
    return $push->safe_psql('postgres', q{SELECT string_agg(foreign_table || '@' || picodata_version || ':'
      || state, ',' ORDER BY foreign_table, picodata_version) FROM picoroute_route_checks});
}
$push->safe_psql('postgres', "SELECT picoroute_apply_events('" . topology_events($va) . "')");
$push->safe_psql('postgres', qq{
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (dbname 'picodata', $xo);
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user 'picoroute', password 'picoroute');
CREATE FOREIGN TABLE fl (f float8, v text) SERVER pico OPTIONS (sharding_key 'f');
CREATE FOREIGN TABLE fl2 (f float8, v text) SERVER pico OPTIONS (table_name 'fl', sharding_key 'f');
CREATE FOREIGN TABLE il (id bigint, v text) SERVER pico OPTIONS (sharding_key 'id');
});
($ret, $out, $err) = $push->psql('postgres', 'SELECT v FROM fl WHERE f = 1.0; SELECT v FROM fl2 WHERE f = 1.5');
is($out, "u1\nv3", 'push node: the rows, through a coordinator');
is(push_checks(), "public.fl\@$va:disagreed,public.fl2\@$va:disagreed", "two disagreements for $va fill the table");
($ret, $out, $err) = $push->psql('postgres', 'SELECT count(*) FROM il WHERE id = 1');
is($out, '0', 'a third table is still routed');
like($err, qr/WARNING:  picoroute: the table of route checks is full \(picoroute.max_route_checks = 2\): keyed statements of foreign table public\.il are routed by picoroute's bucket unchecked/,
     'a WARNING says the table is full, naming the table and the setting');
like($err, qr/HINT:  Raise picoroute.max_route_checks and restart the server\./, 'its hint says what to do');
is(push_checks(), "public.fl\@$va:disagreed,public.fl2\@$va:disagreed", 'nothing recorded for il');

$push->safe_psql('postgres', "SELECT picoroute_apply_events('" . topology_events($vb) . "')");
is($push->safe_psql('postgres', 'SELECT picodata_version FROM picoroute_status'), $vb, 'the version changed');
($ret, $out, $err) = $push->psql('postgres', 'SELECT v FROM fl WHERE f = 1.0; SELECT count(*) FROM il WHERE id = 1');
is($out, "u1\n0", 'push node: the same reads');
like($err, qr/WARNING:  picoroute: Picodata \Q$vb\E hashes the sharding key \(double\) of foreign table public\.fl differently/,
     "fl checked again for $vb: the disagreement is reported again");
is(push_checks(), "public.fl\@$vb:disagreed,public.il\@$vb:agreed",
   "the entries of $va made room for the checks of $vb");

done_testing();
