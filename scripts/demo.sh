#!/usr/bin/env bash
# The picoroute demo: installs the dependencies (Debian 12, as root), builds and installs picoroute,
# starts an emulated Picodata cluster (2 replicasets x 2 instances, real PostgreSQL servers on
# loopback) and a PostgreSQL server with picoroute preloaded, then shows the main job: the topology,
# keys routed to their masters, and a bucket move followed live.
#
#   scripts/demo.sh          set up and run the demo (leaves everything running)
#   scripts/demo.sh stop     stop and remove what the demo started
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO_DIR=${PICOROUTE_DEMO_DIR:-/tmp/picoroute-demo}
EMU_PORT=${PICOROUTE_DEMO_EMU_PORT:-25400}
PG_PORT=${PICOROUTE_DEMO_PORT:-25399}
RUN_USER=${PICOROUTE_DEMO_USER:-postgres}
EMU="$ROOT/test/emulator/picoemu --dir $DEMO_DIR/cluster --base-port $EMU_PORT"

as_user() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$RUN_USER" -- "$@"; else "$@"; fi
}
bindir() { pg_config --bindir; }
psql_demo() { as_user psql -X -h 127.0.0.1 -p "$PG_PORT" -d postgres "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

stop_all() {
    if [ -f "$DEMO_DIR/pg/data/PG_VERSION" ]; then
        as_user "$(bindir)/pg_ctl" -D "$DEMO_DIR/pg/data" -m fast stop >/dev/null 2>&1 || true
    fi
    if [ -d "$DEMO_DIR/cluster" ]; then
        as_user $EMU down >/dev/null || true
    fi
    rm -rf "$DEMO_DIR"
}

if [ "${1:-}" = "stop" ]; then
    stop_all
    echo "demo stopped and removed ($DEMO_DIR)"
    exit 0
fi

say "1/6 dependencies"
if [ "$(id -u)" -eq 0 ]; then "$ROOT/scripts/install-deps.sh"; else "$ROOT/scripts/install-deps.sh" || true; fi

say "2/6 build and install picoroute"
make -C "$ROOT" -j2 >/dev/null
if [ "$(id -u)" -eq 0 ]; then make -C "$ROOT" install >/dev/null; else sudo make -C "$ROOT" install >/dev/null; fi
echo "installed $(pg_config --pkglibdir)/picoroute.so"

say "3/6 start an emulated Picodata cluster (test infrastructure: real PostgreSQL servers)"
stop_all
mkdir -p "$DEMO_DIR"
[ "$(id -u)" -eq 0 ] && chown "$RUN_USER" "$DEMO_DIR"
as_user $EMU up --replicasets 2 --replication-factor 2 | tail -n +2
as_user $EMU create-table users --columns "id int8, name text" --sharding-key id >/dev/null
as_user $EMU load users --rows 1000 >/dev/null
echo "table users: 1000 rows, each stored only on the replicaset that owns its bucket"

say "4/6 start PostgreSQL with picoroute preloaded (port $PG_PORT)"
CONNINFO=$(as_user $EMU conninfo --user picoroute)
as_user "$(bindir)/initdb" -D "$DEMO_DIR/pg/data" -A trust >/dev/null
cat >>"$DEMO_DIR/pg/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$DEMO_DIR/pg'
shared_preload_libraries = 'picoroute'
picoroute.conninfo = '$CONNINFO'
picoroute.refresh_interval = '1s'
CONF
as_user "$(bindir)/pg_ctl" -D "$DEMO_DIR/pg/data" -l "$DEMO_DIR/pg/server.log" -w start >/dev/null
psql_demo -q -c "CREATE EXTENSION picoroute"
psql_demo -q -At -c "SELECT picoroute_refresh(10000)" >/dev/null

say "5/6 the topology the worker keeps in shared memory"
psql_demo -c "SELECT source, source_instance, worker_state, generation, instances, replicasets, bucket_ranges FROM picoroute_status"
psql_demo -c "SELECT name, tier, master_name, master_address, instance_count, bucket_count FROM picoroute_replicasets ORDER BY name"
psql_demo -c "SELECT tier, bucket_id_start, bucket_id_end, replicaset_name, master_address FROM picoroute_buckets ORDER BY 1, 2"

say "keys routed to their masters (bucket ids computed exactly as Picodata does)"
psql_demo -c "SELECT id AS key, r.bucket_id, r.master_address
               FROM generate_series(1, 6) id, picoroute_route('default', id) r"
echo "the emulator agrees (it stores each row on its owner):"
for key in 1 2 3; do
    printf '  key %s: ' "$key"
    as_user $EMU locate users --key "[$key]"
done

say "queries through the picoroute foreign data wrapper"
psql_demo -q <<'SQL'
-- Default options: picoroute sends Picodata's OPTION clause and startup options, which the
-- emulated instances' Picodata fronts parse as Picodata does.
CREATE SERVER picodata FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname 'picodata');
CREATE USER MAPPING FOR CURRENT_USER SERVER picodata OPTIONS (user 'picoroute', password 'picoroute');
IMPORT FOREIGN SCHEMA picodata FROM SERVER picodata INTO public;
SQL
echo "IMPORT FOREIGN SCHEMA built the foreign table 'users' from _pico_table (sharding key id)."
echo "A point query goes straight to the master that owns the key's bucket:"
psql_demo -c "EXPLAIN (COSTS OFF) SELECT name FROM users WHERE id = 1"
psql_demo -c "SELECT id, name FROM users WHERE id IN (1, 2, 3) ORDER BY id"
echo "A query without the key goes to a coordinator, which answers for the whole cluster:"
psql_demo -c "SELECT count(*) FROM users"
psql_demo -c "INSERT INTO users (id, name) VALUES (100001, 'inserted through picoroute')"
psql_demo -c "SELECT id, name FROM users WHERE id = 100001"
echo "Every statement above reached the instances through their Picodata fronts, which refuse what"
echo "Picodata's SQL dialect and limits refuse; what they refused (nothing, or the demo fails):"
as_user $EMU audit

say "6/6 a bucket move, followed live"
BUCKET=$(psql_demo -At -c "SELECT picoroute_bucket_id('default', 1::int8)")
OWNER=$(psql_demo -At -c "SELECT replicaset_name FROM picoroute_buckets WHERE $BUCKET BETWEEN bucket_id_start AND bucket_id_end")
TARGET=$(psql_demo -At -c "SELECT name FROM picoroute_replicasets WHERE name <> '$OWNER' ORDER BY name LIMIT 1")
echo "key 1 is in bucket $BUCKET, owned by $OWNER; master: $(psql_demo -At -c "SELECT picoroute_master('default', $BUCKET)")"
echo "moving bucket $BUCKET to $TARGET in the cluster ..."
# The generation before the move: the worker may publish it before the move command returns.
BEFORE=$(psql_demo -At -c "SELECT generation FROM picoroute_status")
as_user $EMU move default "$BUCKET" "$BUCKET" "$TARGET" >/dev/null
# The worker may publish more than once while the move runs: wait (10 s at most) for the map that
# gives the bucket to the new owner's master.
WANT=$(psql_demo -At -c "SELECT master_address FROM picoroute_replicasets WHERE name = '$TARGET'")
for _ in $(seq 1 50); do
    GEN=$(psql_demo -At -c "SELECT generation FROM picoroute_status")
    NOW=$(psql_demo -At -c "SELECT picoroute_master('default', $BUCKET)")
    [ "$NOW" = "$WANT" ] && break
    sleep 0.2
done
echo "after the worker's next poll (generation $BEFORE -> $GEN): bucket $BUCKET -> $NOW"
[ "$NOW" = "$WANT" ] || { echo "demo: the map did not follow the move within 10 s" >&2; exit 1; }
psql_demo -c "SELECT tier, bucket_id_start, bucket_id_end, replicaset_name FROM picoroute_buckets
               WHERE $BUCKET BETWEEN bucket_id_start - 1 AND bucket_id_end + 1 ORDER BY 2"

cat <<EOF

The demo is running.
  psql:         psql -h 127.0.0.1 -p $PG_PORT -d postgres -U postgres
  try:          SELECT * FROM picoroute_status;  SELECT * FROM picoroute_instances;
                SELECT (picoroute_route('default', 42)).*;
                EXPLAIN SELECT * FROM users WHERE id = 42;
  the cluster:  $ROOT/test/emulator/picoemu --dir $DEMO_DIR/cluster status
  stop it all:  $ROOT/scripts/demo.sh stop
EOF
