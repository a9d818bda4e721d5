// The resolved options of each foreign table (TableInfo) and the connection parameters of each
// server and user, kept per backend so that a statement neither reads the catalogs nor parses its
// options and the cluster's version again: planning, executor setup and execution take a copy. An
// entry is read again after any change of a foreign table, a foreign server, a user mapping, a
// role, a relation or a column (catalog invalidations, this backend's own included), and after the
// map moved to another generation (it gives the default tier and the detected version).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"

#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

#include "pg/fdw/options.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"

#include <cstring>
#include <map>
#include <utility>

namespace picoroute::pg::fdw {

namespace {

struct CacheEntry {
    Oid relid;        // the hash key
    TableInfo *info;  // in CacheMemoryContext, one block (flat_copy)
    uint64 epoch;
    uint64 generation;
};

HTAB *table_cache = nullptr;
// Moved by every invalidation that may concern a table's options: an entry made before is stale.
uint64 cache_epoch = 1;

void forget_tables(Datum, int, uint32) {
    cache_epoch++;
}

HTAB *cache() {
    if (table_cache != nullptr)
        return table_cache;
    HASHCTL ctl;
    memset(&ctl, 0, sizeof(ctl));
    ctl.keysize = sizeof(Oid);
    ctl.entrysize = sizeof(CacheEntry);
    ctl.hcxt = CacheMemoryContext;
    table_cache =
        hash_create("picoroute foreign tables", 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    // Options of tables and servers, user mappings and roles (superuser), and the relations and
    // columns themselves (a rename changes the remote name or the key columns). Catalog caches
    // only: a backend has few relcache callback slots.
    for (int id : {FOREIGNTABLEREL, FOREIGNSERVEROID, USERMAPPINGOID, AUTHOID, RELOID, ATTNUM})
        CacheRegisterSyscacheCallback(id, forget_tables, 0);
    return table_cache;
}

uint64 map_generation() {
    return map_store_available() ? published_generation() : 0;
}

// `t` with its strings and key columns in one block of `cxt`.
TableInfo *flat_copy(const TableInfo *t, MemoryContext cxt) {
    const char *strings[] = {t->server_name, t->tier, t->remote_table, t->picodata_version};
    Size size = MAXALIGN(sizeof(TableInfo)) + sizeof(AttrNumber) * Max(t->nkeys, 0);
    for (const char *s : strings)
        size += s != nullptr ? strlen(s) + 1 : 0;
    char *block = static_cast<char *>(MemoryContextAlloc(cxt, size));
    TableInfo *copy = reinterpret_cast<TableInfo *>(block);
    *copy = *t;
    char *at = block + MAXALIGN(sizeof(TableInfo));
    if (t->nkeys > 0) {
        copy->key_attnums = reinterpret_cast<AttrNumber *>(at);
        memcpy(at, t->key_attnums, sizeof(AttrNumber) * t->nkeys);
        at += sizeof(AttrNumber) * t->nkeys;
    }
    char *copies[4];
    for (int i = 0; i < 4; i++) {
        copies[i] = nullptr;
        if (strings[i] == nullptr)
            continue;
        size_t n = strlen(strings[i]) + 1;
        memcpy(at, strings[i], n);
        copies[i] = at;
        at += n;
    }
    copy->server_name = copies[0];
    copy->tier = copies[1];
    copy->remote_table = copies[2];
    copy->picodata_version = copies[3];
    return copy;
}

struct KeptParams {
    ConnParams params;
    uint64 epoch;
    uint64 generation;
};

// By (server, user). Emptied when it grows past a bound (roles come and go).
std::map<std::pair<Oid, Oid>, KeptParams> kept_params;
constexpr size_t kMaxKeptParams = 256;

}  // namespace

ConnParams conn_params_for(Oid serverid, Oid userid) {
    if (table_cache == nullptr)
        pg_call([] { (void)cache(); });  // registers the invalidation callbacks
    auto it = kept_params.find({serverid, userid});
    if (it != kept_params.end() && it->second.epoch == cache_epoch &&
        it->second.generation == map_generation())
        return it->second.params;
    uint64 epoch = cache_epoch;
    uint64 generation = map_generation();
    ConnParams params = build_conn_params(serverid, userid);  // may throw: nothing kept then
    if (kept_params.size() >= kMaxKeptParams)
        kept_params.clear();
    kept_params[{serverid, userid}] = KeptParams{params, epoch, generation};
    return params;
}

ReadPref table_read_pref(const TableInfo *table) {
    ReadPref server = static_cast<ReadPref>(table->read_pref);
    if (server == ReadPref::Leader || table->unlogged || leader_reads_learned(table->server_name) ||
        server_written(table->server_name))
        return ReadPref::Leader;
    return server;
}

ConnParams read_conn_params(const TableInfo *table, Oid userid) {
    ConnParams params = conn_params_for(table->serverid, userid);
    if (table_read_pref(table) == ReadPref::Leader)  // moved, not copied again
        return leader_params(std::move(params));
    return params;
}

TableInfo *get_table_info(Oid relid) {
    HTAB *h = cache();
    bool found = false;
    CacheEntry *entry = static_cast<CacheEntry *>(hash_search(h, &relid, HASH_FIND, &found));
    if (found && entry->epoch == cache_epoch && entry->generation == map_generation())
        return flat_copy(entry->info, CurrentMemoryContext);
    // Read before building: a change while it builds leaves the entry stale, not wrong.
    uint64 epoch = cache_epoch;
    uint64 generation = map_generation();
    TableInfo *built = build_table_info(relid);  // may ereport: the cache is not touched yet
    TableInfo *kept = flat_copy(built, CacheMemoryContext);
    entry = static_cast<CacheEntry *>(hash_search(h, &relid, HASH_ENTER, &found));
    if (found && entry->info != nullptr)
        pfree(entry->info);
    entry->info = kept;
    entry->epoch = epoch;
    entry->generation = generation;
    return built;
}

Oid user_for_rte(RangeTblEntry *rte) {
    return rte != nullptr && OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
}

}  // namespace picoroute::pg::fdw
