// Lookups on the shared topology map: picoroute_master, picoroute_route, picoroute_replicas, and
// the set-returning functions behind the views picoroute_instances, picoroute_replicasets,
// picoroute_buckets and picoroute_tiers. They read the backend-local copy of the published image
// (map_store.h) and never wait on the network or on the publisher.
extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
}

#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/sql_common.h"

#include <string_view>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;

namespace {

// The bucket's owning range, its replicaset and its master, as indexes into the image.
struct Owner {
    int32_t range = kNone;
    int32_t replicaset = kNone;
    int32_t master = kNone;
};

Owner find_owner(const SnapshotView &view, int32_t tier, uint32_t bucket_id) {
    Owner owner;
    owner.range = view.find_range(tier, bucket_id);
    if (owner.range == kNone)
        return owner;
    owner.replicaset = view.range(owner.range).replicaset;
    owner.master = view.find_master(tier, bucket_id);
    return owner;
}

Cell text_of_instance(const SnapshotView &view, int32_t instance,
                      StringRef InstanceRecord::*field) {
    return instance == kNone ? Cell::null()
                             : Cell::str_or_null(view.str(view.instance(instance).*field));
}

}  // namespace

// picoroute_master(tier text, bucket_id integer) returns text
PICOROUTE_SQL_FUNCTION(picoroute_master) {
    // The hot path: nothing here but plain data, so the arguments are fetched and the result is
    // built without pg_call (an ereport would jump over no destructor).
    text *tier_arg = PG_GETARG_TEXT_PP(0);
    int32 bucket_arg = PG_GETARG_INT32(1);
    MapRef map = current_map();
    int32_t tier =
        require_tier(*map.view, map.generation,
                     std::string_view(VARDATA_ANY(tier_arg), VARSIZE_ANY_EXHDR(tier_arg)));
    uint32_t bucket_id = require_bucket_in_range(*map.view, tier, bucket_arg);
    int32_t master = map.view->find_master(tier, bucket_id);
    // The address points into this backend's copy of the image, which stays put until the next
    // current_map() call of this backend.
    std::string_view address =
        master == kNone ? std::string_view() : map.view->str(map.view->instance(master).address);
    if (address.empty())
        PG_RETURN_NULL();
    PG_RETURN_TEXT_P(cstring_to_text_with_len(address.data(), static_cast<int>(address.size())));
}

// picoroute_route(tier text, VARIADIC key "any")
//   -> (bucket_id integer, replicaset_uuid text, master_uuid text, master_address text)
PICOROUTE_SQL_FUNCTION(picoroute_route) {
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = require_tier(view, map.generation, text_arg(fcinfo, 0));
    uint32_t bucket_count = require_bucket_count(view, tier);
    bool key_is_null = false;
    uint32_t bucket_id =
        hash_key_arguments(fcinfo, 1, bucket_count, &key_is_null, cluster_hash_rule(view));
    if (key_is_null)
        PG_RETURN_NULL();
    Owner owner = find_owner(view, tier, bucket_id);
    Row row;
    row.push_back(Cell::int4(static_cast<int32_t>(bucket_id)));
    row.push_back(owner.range == kNone
                      ? Cell::null()
                      : Cell::str_or_null(view.str(view.range(owner.range).replicaset_uuid)));
    row.push_back(text_of_instance(view, owner.master, &InstanceRecord::uuid));
    row.push_back(text_of_instance(view, owner.master, &InstanceRecord::address));
    return make_result_row(fcinfo, row);
}

// picoroute_replicas(tier text, bucket_id integer)
//   -> SETOF (uuid text, name text, address text, state text, is_master boolean)
// Every known instance of the replicaset owning the bucket, master first, then by uuid.
PICOROUTE_SQL_FUNCTION(picoroute_replicas) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = require_tier(view, map.generation, text_arg(fcinfo, 0));
    uint32_t bucket_id = require_bucket_in_range(view, tier, PG_GETARG_INT32(1));
    Owner owner = find_owner(view, tier, bucket_id);
    std::vector<Row> rows;
    auto add = [&](uint32_t i) {
        const InstanceRecord &instance = view.instance(i);
        rows.push_back({Cell::str(view.str(instance.uuid)),
                        Cell::str_or_null(view.str(instance.name)),
                        Cell::str_or_null(view.str(instance.address)),
                        Cell::str_or_null(view.str(instance.state)),
                        Cell::boolean(static_cast<int32_t>(i) == owner.master)});
    };
    if (owner.range != kNone) {
        if (owner.master != kNone)
            add(static_cast<uint32_t>(owner.master));
        std::string_view owner_uuid = view.str(view.range(owner.range).replicaset_uuid);
        for (uint32_t i = 0; i < view.n_instances(); i++) {
            if (static_cast<int32_t>(i) != owner.master &&
                view.str(view.instance(i).replicaset_uuid) == owner_uuid)
                add(i);
        }
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}

// Behind the view picoroute_instances: (uuid, name, replicaset_uuid, replicaset_name, tier,
// state, address, is_master, is_online, picodata_version), ordered by uuid.
PICOROUTE_SQL_FUNCTION(picoroute_instance_rows) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    std::vector<Row> rows;
    rows.reserve(view.n_instances());
    for (uint32_t i = 0; i < view.n_instances(); i++) {
        const InstanceRecord &instance = view.instance(i);
        const ReplicasetRecord *replicaset =
            instance.replicaset == kNone ? nullptr : &view.replicaset(instance.replicaset);
        rows.push_back({
            Cell::str(view.str(instance.uuid)),
            Cell::str_or_null(view.str(instance.name)),
            Cell::str_or_null(view.str(instance.replicaset_uuid)),
            replicaset ? Cell::str_or_null(view.str(replicaset->name)) : Cell::null(),
            replicaset ? Cell::str_or_null(view.str(replicaset->tier)) : Cell::null(),
            Cell::str_or_null(view.str(instance.state)),
            Cell::str_or_null(view.str(instance.address)),
            Cell::boolean(replicaset != nullptr && replicaset->master == static_cast<int32_t>(i)),
            Cell::boolean(instance.online != 0),
            Cell::str_or_null(view.str(instance.version)),
        });
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}

// Behind the view picoroute_replicasets: (uuid, name, tier, master_uuid, master_name,
// master_address, instance_count, bucket_count), ordered by uuid. bucket_count is the number of
// buckets the map assigns to the replicaset.
PICOROUTE_SQL_FUNCTION(picoroute_replicaset_rows) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    std::vector<int32_t> instance_count(view.n_replicasets(), 0);
    std::vector<int64_t> bucket_count(view.n_replicasets(), 0);
    for (uint32_t i = 0; i < view.n_instances(); i++) {
        if (view.instance(i).replicaset != kNone)
            instance_count[view.instance(i).replicaset]++;
    }
    for (uint32_t r = 0; r < view.n_ranges(); r++) {
        const RangeRecord &range = view.range(r);
        if (range.replicaset != kNone)
            bucket_count[range.replicaset] += int64_t{range.end} - range.start + 1;
    }
    std::vector<Row> rows;
    rows.reserve(view.n_replicasets());
    for (uint32_t i = 0; i < view.n_replicasets(); i++) {
        const ReplicasetRecord &replicaset = view.replicaset(i);
        rows.push_back({
            Cell::str(view.str(replicaset.uuid)),
            Cell::str_or_null(view.str(replicaset.name)),
            Cell::str_or_null(view.str(replicaset.tier)),
            text_of_instance(view, replicaset.master, &InstanceRecord::uuid),
            text_of_instance(view, replicaset.master, &InstanceRecord::name),
            text_of_instance(view, replicaset.master, &InstanceRecord::address),
            Cell::int4(instance_count[i]),
            Cell::int8(bucket_count[i]),
        });
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}

// Behind the view picoroute_buckets: (tier, bucket_id_start, bucket_id_end, replicaset_uuid,
// replicaset_name, master_address, state), ordered by tier and start.
PICOROUTE_SQL_FUNCTION(picoroute_bucket_rows) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    std::vector<Row> rows;
    rows.reserve(view.n_ranges());
    for (uint32_t t = 0; t < view.n_tiers(); t++) {
        const TierRecord &tier = view.tier(t);
        for (uint32_t r = tier.first_range; r < tier.first_range + tier.n_ranges; r++) {
            const RangeRecord &range = view.range(r);
            const ReplicasetRecord *replicaset =
                range.replicaset == kNone ? nullptr : &view.replicaset(range.replicaset);
            rows.push_back({
                Cell::str(view.str(tier.name)),
                Cell::int8(range.start),
                Cell::int8(range.end),
                Cell::str_or_null(view.str(range.replicaset_uuid)),
                replicaset ? Cell::str_or_null(view.str(replicaset->name)) : Cell::null(),
                replicaset ? text_of_instance(view, replicaset->master, &InstanceRecord::address)
                           : Cell::null(),
                Cell::str_or_null(view.str(range.state)),
            });
        }
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}

// Behind the view picoroute_tiers: (name, bucket_count, replicaset_count, range_count,
// buckets_mapped), ordered by name. bucket_count is NULL while the tier's count is not known.
PICOROUTE_SQL_FUNCTION(picoroute_tier_rows) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    std::vector<int32_t> replicaset_count(view.n_tiers(), 0);
    for (uint32_t i = 0; i < view.n_replicasets(); i++) {
        if (view.replicaset(i).tier_index != kNone)
            replicaset_count[view.replicaset(i).tier_index]++;
    }
    std::vector<Row> rows;
    rows.reserve(view.n_tiers());
    for (uint32_t t = 0; t < view.n_tiers(); t++) {
        const TierRecord &tier = view.tier(t);
        int64_t mapped = 0;
        for (uint32_t r = tier.first_range; r < tier.first_range + tier.n_ranges; r++)
            mapped += int64_t{view.range(r).end} - view.range(r).start + 1;
        rows.push_back({
            Cell::str(view.str(tier.name)),
            tier.bucket_count == 0 ? Cell::null() : Cell::int8(tier.bucket_count),
            Cell::int4(replicaset_count[t]),
            Cell::int4(static_cast<int32_t>(tier.n_ranges)),
            Cell::int8(mapped),
        });
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}
