// Functions that show or change the state of the map: picoroute_status_row (behind the view
// picoroute_status), picoroute_refresh (poll source), picoroute_apply_events (push source), and
// picoroute_assert_preloaded (the last statement of the extension script).
extern "C" {
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/jsonb.h"

#include "libpq-fe.h"

PG_FUNCTION_INFO_V1(picoroute_status_row);
PG_FUNCTION_INFO_V1(picoroute_refresh);
PG_FUNCTION_INFO_V1(picoroute_apply_events);
PG_FUNCTION_INFO_V1(picoroute_assert_preloaded);
}

#include "core/errors.h"
#include "core/notification.h"
#include "core/snapshot_restore.h"
#include "core/topology.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/settings.h"
#include "pg/sql_common.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;

namespace {

// A conninfo value quoted for a keyword=value connection string.
std::string quote_conninfo_value(const char *value) {
    std::string out = "'";
    for (const char *p = value; *p; p++) {
        if (*p == '\'' || *p == '\\')
            out += '\\';
        out += *p;
    }
    return out + "'";
}

// The connection string with any password replaced by ********. URIs come back in keyword=value
// form; a string libpq cannot parse is not shown at all.
std::string masked_conninfo(const char *conninfo) {
    if (conninfo == nullptr || conninfo[0] == '\0')
        return "";
    char *error = nullptr;
    PQconninfoOption *options = PQconninfoParse(conninfo, &error);
    if (options == nullptr) {
        if (error != nullptr)
            PQfreemem(error);
        return "(invalid connection string, not shown)";
    }
    std::string out;
    for (PQconninfoOption *option = options; option->keyword != nullptr; option++) {
        if (option->val == nullptr || option->val[0] == '\0')
            continue;
        if (!out.empty())
            out += ' ';
        out += option->keyword;
        out += '=';
        out += strcmp(option->keyword, "password") == 0 ? std::string("********")
                                                        : quote_conninfo_value(option->val);
    }
    PQconninfoFree(options);
    return out;
}

bool may_see_settings() {
    bool allowed = false;
    pg_call([&] {
        allowed = superuser() || has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_SETTINGS);
    });
    return allowed;
}

Cell text_or_null(const char *text) {
    return text[0] == '\0' ? Cell::null() : Cell::str(text);
}

}  // namespace

// Behind the view picoroute_status: one row.
extern "C" Datum picoroute_status_row(PG_FUNCTION_ARGS) {
    require_preloaded();
    return guarded([&]() -> Datum {
        StatusCopy status = read_status();
        MapRef map = current_map();
        SnapshotLimits limits = configured_limits();
        Row row;
        row.push_back(Cell::str(source_mode_name(setting_source)));
        row.push_back(may_see_settings() ? Cell::str(masked_conninfo(setting_conninfo))
                                         : Cell::null());
        row.push_back(text_or_null(status.source_instance));
        row.push_back(status.worker_pid == 0 ? Cell::null() : Cell::int4(status.worker_pid));
        row.push_back(Cell::str(worker_state_name(status.state)));
        row.push_back(Cell::timestamptz(status.last_refresh_start));
        row.push_back(Cell::timestamptz(status.last_refresh_end));
        row.push_back(Cell::timestamptz(status.last_success));
        row.push_back(text_or_null(status.last_error));
        row.push_back(text_or_null(status.last_warning));
        // The counts describe the map of this generation, read together.
        row.push_back(Cell::int8(static_cast<int64_t>(map.generation)));
        row.push_back(Cell::int8(static_cast<int64_t>(status.refreshes_finished)));
        row.push_back(Cell::int8(static_cast<int64_t>(status.refreshes_failed)));
        row.push_back(Cell::int8(static_cast<int64_t>(status.topology_resets)));
        row.push_back(Cell::int4(static_cast<int32_t>(map.view->n_tiers())));
        row.push_back(Cell::int4(static_cast<int32_t>(map.view->n_replicasets())));
        row.push_back(Cell::int4(static_cast<int32_t>(map.view->n_instances())));
        row.push_back(Cell::int4(static_cast<int32_t>(map.view->n_ranges())));
        row.push_back(Cell::int4(static_cast<int32_t>(limits.max_replicasets)));
        row.push_back(Cell::int4(static_cast<int32_t>(limits.max_instances)));
        row.push_back(Cell::int4(static_cast<int32_t>(limits.max_bucket_ranges)));
        row.push_back(Cell::boolean(status.capacity_exceeded));
        return make_result_row(fcinfo, row);
    });
}

// picoroute_refresh(timeout_ms integer) returns bigint: wakes the worker, waits until a refresh
// that started after the call has finished, and returns the generation then current.
extern "C" Datum picoroute_refresh(PG_FUNCTION_ARGS) {
    require_preloaded();
    int32 timeout_ms = PG_GETARG_INT32(0);
    uint64_t generation = guarded([&] {
        if (setting_source == SOURCE_PUSH)
            throw SqlError(
                ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "picoroute_refresh is not available when picoroute.source is 'push'", {},
                "In push mode the map changes only through picoroute_apply_events(); set "
                "picoroute.source = 'poll' to have the worker read the cluster.");
        if (timeout_ms < 1)
            throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE,
                           "picoroute_refresh: timeout_ms must be at least 1, not " +
                               std::to_string(timeout_ms));
        auto not_running = [] {
            return SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                            "picoroute: the background worker is not running", {},
                            "The worker starts with the server when picoroute is in "
                            "shared_preload_libraries; check the server log for why it stopped.");
        };
        if (read_status().worker_pid == 0)
            throw not_running();
        bool done = false, failed = false;
        pg_call([&] { done = request_refresh_and_wait(timeout_ms, &failed); });
        StatusCopy status = read_status();
        if (!done) {
            if (status.worker_pid == 0)
                throw not_running();
            throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                           "picoroute_refresh: no refresh finished within " +
                               std::to_string(timeout_ms) + " ms",
                           std::string("The worker is ") + worker_state_name(status.state) + ".",
                           "The worker may be connecting or backing off after a failure; see "
                           "picoroute_status, or call picoroute_refresh with a larger timeout_ms.");
        }
        if (failed)
            throw SqlError(ERRCODE_SYSTEM_ERROR, "picoroute_refresh: the refresh failed",
                           status.last_error[0] ? status.last_error : "no error was recorded",
                           "The previous map is still in use; see picoroute_status.");
        return status.generation;
    });
    PG_RETURN_INT64(static_cast<int64>(generation));
}

namespace {

// The model this backend last published, valid while nobody else published since: a session
// that feeds events keeps its model instead of rebuilding it from the image on every call.
std::optional<Topology> cached_model;
uint64_t cached_generation = 0;

// Applies decoded events to the published map and publishes the result. The caller holds the
// publish lock; the lock is released by the caller on every path.
void apply_and_publish(const std::vector<Event> &events) {
    uint64_t generation = published_generation();
    if (!cached_model || cached_generation != generation || generation == 0) {
        cached_model.reset();
        cached_model.emplace(topology_from_snapshot(*current_map().view));
        cached_generation = generation;
    }
    // apply_all changes the model only when every event applies.
    if (!cached_model->apply_all(events))
        return;  // nothing changed: the generation stays
    std::string image;
    try {
        image = build_snapshot(*cached_model, configured_limits());
    } catch (...) {
        cached_model.reset();  // the model is ahead of the published map: rebuild next time
        throw;
    }
    publish(image);
    cached_generation = published_generation();
}

}  // namespace

// picoroute_apply_events(events jsonb) returns integer: push source. Applies one notification
// object or an array of them (facts section 5, plus {"map":"tier","name":...,"bucket_count":...})
// to the current map with the seed algorithm and publishes the result once. All or nothing: on
// any error the previous map stays published and the generation does not move.
extern "C" Datum picoroute_apply_events(PG_FUNCTION_ARGS) {
    require_preloaded();
    int32 applied = guarded([&] {
        if (setting_source != SOURCE_PUSH)
            throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                           "picoroute_apply_events is only available when picoroute.source is "
                           "'push'",
                           "picoroute.source is 'poll': the background worker owns the map.",
                           "Set picoroute.source = 'push' (and reload the configuration) to feed "
                           "topology events through this function.");
        std::string json;
        pg_call([&] {
            Jsonb *document = PG_GETARG_JSONB_P(0);
            char *text = JsonbToCString(nullptr, &document->root, VARSIZE(document));
            json.assign(text);
        });
        std::vector<Event> events;
        try {
            events = events_from_notification(json);
        } catch (const Error &e) {
            throw SqlError(sqlstate_for(e.kind()),
                           std::string("picoroute_apply_events: ") + e.what(),
                           "The topology map was not changed.", e.hint());
        }

        pg_call([] { publish_lock(); });
        try {
            apply_and_publish(events);
            // Push mode has no worker refresh to report capacity problems: this call does.
            status_set_capacity_exceeded(false);
        } catch (const Error &e) {
            publish_unlock();
            if (e.kind() == ErrorKind::CapacityExceeded)
                status_set_capacity_exceeded(true);
            throw SqlError(sqlstate_for(e.kind()),
                           std::string("picoroute_apply_events: ") + e.what(),
                           "The topology map was not changed.", e.hint());
        } catch (...) {
            publish_unlock();
            throw;
        }
        publish_unlock();
        return static_cast<int32>(events.size());
    });
    PG_RETURN_INT32(applied);
}

// Run as the last statement of CREATE EXTENSION, so that it fails clearly without preloading.
extern "C" Datum picoroute_assert_preloaded(PG_FUNCTION_ARGS) {
    require_preloaded();
    PG_RETURN_VOID();
}
