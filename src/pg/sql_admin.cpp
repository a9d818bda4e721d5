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
#include "lib/stringinfo.h"
#include "utils/memutils.h"

#include "libpq-fe.h"
}

#include "core/errors.h"
#include "core/notification.h"
#include "core/snapshot_restore.h"
#include "core/topology.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/settings.h"
#include "pg/sql_common.h"
#include "pg/worker_status.h"

#include <csignal>
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
PICOROUTE_SQL_FUNCTION(picoroute_status_row) {
    StatusCopy status = read_status();
    MapRef map = current_map();
    SnapshotLimits limits = configured_limits();
    Row row;
    row.push_back(Cell::str(source_mode_name(setting_source)));
    row.push_back(may_see_settings() ? Cell::str(masked_conninfo(setting_conninfo)) : Cell::null());
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
    row.push_back(Cell::boolean(map_over_capacity()));
    std::optional<std::string> version = map.view->cluster_version();
    row.push_back(version ? Cell::str(*version) : Cell::null());
    return make_result_row(fcinfo, row);
}

// picoroute_refresh(timeout_ms integer) returns bigint: wakes the worker, waits until a refresh
// that started after the call has finished, and returns the generation then current.
PICOROUTE_SQL_FUNCTION(picoroute_refresh) {
    int32 timeout_ms = PG_GETARG_INT32(0);
    if (setting_source == SOURCE_PUSH)
        throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                       "picoroute_refresh is not available when picoroute.source is 'push'", {},
                       "In push mode the map changes only through picoroute_apply_events(); set "
                       "picoroute.source = 'poll' to have the worker read the cluster.");
    if (timeout_ms < 1)
        throw SqlError(
            ERRCODE_INVALID_PARAMETER_VALUE,
            "picoroute_refresh: timeout_ms must be at least 1, not " + std::to_string(timeout_ms));
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
        throw SqlError(
            ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "picoroute_refresh: no refresh finished within " + std::to_string(timeout_ms) + " ms",
            std::string("The worker is ") + worker_state_name(status.state) + ".",
            "The worker may be connecting or backing off after a failure; see "
            "picoroute_status, or call picoroute_refresh with a larger timeout_ms.");
    }
    if (failed)
        throw SqlError(ERRCODE_SYSTEM_ERROR, "picoroute_refresh: the refresh failed",
                       status.last_error[0] ? status.last_error : "no error was recorded",
                       "The previous map is still in use; see picoroute_status.");
    PG_RETURN_INT64(static_cast<int64>(published_generation()));
}

namespace {

// Bounds of one call: a full snapshot of a cluster at the largest capacities is far below them.
constexpr uint32 kMaxEventsPerCall = 100000;
constexpr Size kMaxEventsBytes = 64 * 1024 * 1024;
// Events decoded, then applied, per slice; interrupts are checked between slices.
constexpr uint32 kSlice = 1000;
constexpr int kPublishAttempts = 3;

// The model this backend last published, valid while nobody else published since: a session
// that feeds events keeps its model instead of rebuilding it from the image on every call.
std::optional<Topology> cached_model;
uint64_t cached_generation = 0;

void check_interrupts() {
    pg_call([] { CHECK_FOR_INTERRUPTS(); });
}

[[noreturn]] void too_large(const std::string &what) {
    throw SqlError(ERRCODE_PROGRAM_LIMIT_EXCEEDED, "picoroute_apply_events: " + what,
                   "The topology map was not changed.",
                   "Split the events into several calls of at most " +
                       std::to_string(kMaxEventsPerCall) + " events and " +
                       std::to_string(kMaxEventsBytes / (1024 * 1024)) + " MB.");
}

// The error of picoroute_apply_events for a core error: nothing was published.
SqlError unchanged(const Error &e) {
    return SqlError(sqlstate_for(e.kind()), std::string("picoroute_apply_events: ") + e.what(),
                    "The topology map was not changed.", e.hint());
}

// Decodes the argument slice by slice (so memory stays bounded by one slice of text and the
// events), checking for interrupts between slices.
std::vector<Event> decode_events(Jsonb *document) {
    if (VARSIZE(document) > kMaxEventsBytes)
        too_large("the events take " + std::to_string(VARSIZE(document)) +
                  " bytes, more than the limit of " + std::to_string(kMaxEventsBytes));
    const bool is_array = JB_ROOT_IS_ARRAY(document) && !JB_ROOT_IS_SCALAR(document);
    const uint32 count = is_array ? JB_ROOT_COUNT(document) : 1;
    if (count > kMaxEventsPerCall)
        too_large(std::to_string(count) + " events, more than the limit of " +
                  std::to_string(kMaxEventsPerCall));
    std::vector<Event> events;
    events.reserve(count);
    MemoryContext slice_context = nullptr;
    pg_call([&] {
        slice_context = AllocSetContextCreate(CurrentMemoryContext, "picoroute_apply_events",
                                              ALLOCSET_DEFAULT_SIZES);
    });
    try {
        for (uint32 first = 0; first < count || (count == 0 && first == 0); first += kSlice) {
            // PostgreSQL builds the slice's text in its own memory; C++ copies it afterwards
            // (no C++ allocation may throw inside pg_call).
            StringInfoData buffer;
            pg_call([&] {
                CHECK_FOR_INTERRUPTS();
                MemoryContext old = MemoryContextSwitchTo(slice_context);
                initStringInfo(&buffer);
                if (!is_array) {
                    JsonbToCString(&buffer, &document->root, VARSIZE(document));
                } else {
                    appendStringInfoChar(&buffer, '[');
                    uint32 last = Min(count, first + kSlice);
                    for (uint32 i = first; i < last; i++) {
                        JsonbValue *value = getIthJsonbValueFromContainer(&document->root, i);
                        if (i > first)
                            appendStringInfoChar(&buffer, ',');
                        // A scalar element is not a notification: decoding says so by its index.
                        if (value != nullptr && value->type == jbvBinary) {
                            char *element = JsonbToCString(nullptr, value->val.binary.data,
                                                           value->val.binary.len);
                            appendStringInfoString(&buffer, element);
                        } else {
                            appendStringInfoString(&buffer, "null");
                        }
                    }
                    appendStringInfoChar(&buffer, ']');
                }
                MemoryContextSwitchTo(old);
            });
            std::string text(buffer.data, static_cast<size_t>(buffer.len));
            pg_call([&] { MemoryContextReset(slice_context); });
            std::vector<Event> slice;
            try {
                slice = events_from_notification(text, first);
            } catch (const Error &e) {
                throw unchanged(e);
            }
            for (Event &event : slice)
                events.push_back(std::move(event));
            if (count == 0)
                break;
        }
    } catch (...) {
        pg_call([&] { MemoryContextDelete(slice_context); });
        throw;
    }
    pg_call([&] { MemoryContextDelete(slice_context); });
    return events;
}

// Applies the events to a copy of the current map, slice by slice with interrupts checked in
// between, and publishes the copy only when every event applied and the image fits: on any
// error, a cancel or statement_timeout included, the published map stays as it was. The copy is
// made against the generation it started from; when another call published meanwhile, it starts
// again from the new map.
void apply_and_publish(const std::vector<Event> &events) {
    for (int attempt = 0; attempt < kPublishAttempts; attempt++) {
        uint64_t generation = published_generation();
        std::optional<Topology> model;
        if (cached_model && cached_generation == generation && generation != 0) {
            model.emplace(*cached_model);
        } else {
            MapRef map = current_map();
            model.emplace(topology_from_snapshot(*map.view));
            generation = map.generation;
        }
        bool changed = false;
        for (size_t first = 0; first < events.size(); first += kSlice) {
            check_interrupts();
            try {
                changed |= model->apply_all(events, first, first + kSlice);
            } catch (const Error &e) {
                throw unchanged(e);
            }
        }
        if (!changed)
            return;  // nothing changed: the generation stays
        check_interrupts();
        PublishOutcome outcome = publish(*model, MapOrigin::Events, generation);
        if (outcome.refusal)
            throw unchanged(*outcome.refusal);
        if (outcome.result != PublishResult::Conflict) {
            cached_model = std::move(model);
            cached_generation = outcome.generation;
            return;
        }
    }
    throw SqlError(ERRCODE_T_R_SERIALIZATION_FAILURE,
                   "picoroute_apply_events: the topology map kept changing while the events were "
                   "applied",
                   "The topology map was not changed by this call.",
                   "Feed the events from one session, or retry.");
}

}  // namespace

// picoroute_apply_events(events jsonb) returns integer: push source. Applies one notification
// object or an array of them (facts section 5, plus {"map":"tier","name":...,"bucket_count":...})
// to the current map with the seed algorithm and publishes the result once. All or nothing: on
// any error the previous map stays published and the generation does not move. Bounded
// (kMaxEventsPerCall, kMaxEventsBytes) and interruptible.
PICOROUTE_SQL_FUNCTION(picoroute_apply_events) {
    if (setting_source != SOURCE_PUSH)
        throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                       "picoroute_apply_events is only available when picoroute.source is "
                       "'push'",
                       "picoroute.source is 'poll': the background worker owns the map.",
                       "Set picoroute.source = 'push' (and reload the configuration) to feed "
                       "topology events through this function.");
    Jsonb *document = nullptr;
    pg_call([&] { document = PG_GETARG_JSONB_P(0); });
    std::vector<Event> events = decode_events(document);
    apply_and_publish(events);
    PG_RETURN_INT32(static_cast<int32>(events.size()));
}

// picoroute_restart_worker() returns integer: stops the background worker (SIGTERM), which the
// postmaster starts again within 5 seconds; returns the pid that was signalled.
PICOROUTE_SQL_FUNCTION(picoroute_restart_worker) {
    StatusCopy status = read_status();
    if (status.worker_pid == 0)
        throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                       "picoroute: the background worker is not running", {},
                       "The postmaster starts it again within 5 seconds after it stopped; "
                       "see picoroute_status and the server log.");
    if (kill(status.worker_pid, SIGTERM) != 0)
        throw SqlError(ERRCODE_SYSTEM_ERROR,
                       "picoroute: could not signal the background worker (pid " +
                           std::to_string(status.worker_pid) + "): " + strerror(errno));
    PG_RETURN_INT32(static_cast<int32>(status.worker_pid));
}

// Run as the last statement of CREATE EXTENSION, so that it fails clearly without preloading.
PICOROUTE_SQL_FUNCTION(picoroute_assert_preloaded) {
    PG_RETURN_VOID();
}
