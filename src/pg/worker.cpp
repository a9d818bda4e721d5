// The background worker: refreshes the topology from its source and publishes it to shared memory.
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procsignal.h"
#include "utils/guc.h"
#include "utils/wait_event.h"
}

#include "core/errors.h"
#include "core/snapshot_restore.h"
#include "core/topology_diff.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/poll_source.h"
#include "pg/settings.h"
#include "pg/topology_log.h"
#include "pg/worker.h"
#include "pg/worker_status.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace picoroute::pg {

namespace {

// Set when the latch was set during a network wait: a refresh was requested meanwhile.
bool wake_pending = false;

// Answers pending process-signal barriers (after every wake-up of the latch). The worker is in the
// process array (it connects to no database), so every process-signal barrier (DROP DATABASE
// emits one) waits for it to answer.
void absorb_signal_barriers() {
    if (ProcSignalBarrierPending)
        pg_call([] { ProcessProcSignalBarrier(); });
}

// What a set latch means while the poll source waits on the network: answer the barriers, note
// the wake-up, and abandon the wait on shutdown.
bool on_latch_during_fetch() {
    absorb_signal_barriers();
    wake_pending = true;
    return ShutdownRequestPending;
}

constexpr long kMaxBackoffMs = 30000;
constexpr long kIdleWaitMs = 60000;

// The worker's model of the cluster and the generation it last published (or adopted).
Topology *model = nullptr;
uint64_t model_generation = 0;
PollSource *source = nullptr;
std::string last_logged_warning;
// Set when the last refresh could not publish for capacity. The model then holds a topology that
// never reached shared memory, and a model keeps what no catalog diff removes (tiers are static,
// the ranges of a tier whose bucket map was not read stay): following the catalog from there could
// stay over capacity after the catalog shrank back. The next refresh starts again from the
// published map, the last one that fitted.
bool model_over_capacity = false;

// The instance the last successful fetch read from ("" before the first).
std::string last_read_from;

// Records a change of the worker's own state in the topology event log, with the generation then
// current (the map changes are recorded by publish()).
void log_worker_change(ChangeKind kind, const std::string &old_value, const std::string &new_value,
                       const std::string &detail) noexcept {
    try {
        TopologyChange change;
        change.kind = kind;
        change.old_value = old_value;
        change.new_value = new_value;
        change.detail = detail;
        topology_log_append({change}, published_generation());
    } catch (...) {
        // The log is an aid: the worker goes on without this record.
    }
}

// Brings the model in line with the shared map when somebody else published since (push mode,
// or a restart of this worker with the map still in shared memory), or when the model went over
// capacity.
void adopt_shared_map() {
    if (!model_over_capacity && published_generation() == model_generation)
        return;  // the usual case: nothing to copy
    MapRef map = current_map();
    *model = topology_from_snapshot(*map.view);
    model_generation = map.generation;
    model_over_capacity = false;
    source->set_addresses_from_catalog(map.origin == MapOrigin::Catalog);
}

// One refresh; returns an empty string on success, else the error.
std::string refresh_once() {
    std::string error;
    std::string hint;
    try {
        adopt_shared_map();
        status_set_state(WorkerState::Refreshing);
        SourceUpdate update = source->fetch(*model);
        status_set_source(update.instance.c_str());

        // The model follows the catalog even when the image cannot be published (capacity): the
        // next refresh then diffs against what the catalog really says.
        if (update.reset) {
            ereport(LOG, (errmsg("picoroute: now reading the topology from %s; the topology is "
                                 "cleared and rebuilt",
                                 update.instance.c_str())));
            log_worker_change(ChangeKind::SourceSwitched, last_read_from, update.instance,
                              "the topology is cleared and rebuilt from the new source");
            model->clear();
        }
        last_read_from = update.instance;
        model->apply_all(update.events);
        // Every instance the catalog lists now has the catalog's address; the others are gone.
        source->set_addresses_from_catalog(true);

        std::string warning;
        for (const std::string &w : update.warnings)
            warning += (warning.empty() ? "" : "; ") + w;
        status_set_warning(warning.c_str());
        if (!warning.empty() && warning != last_logged_warning)
            ereport(WARNING, (errmsg("picoroute: %s", warning.c_str())));
        last_logged_warning = warning;

        // The worker owns the map in poll mode: it publishes whatever generation is current.
        PublishOutcome outcome = publish(*model, MapOrigin::Catalog);
        if (outcome.refusal) {
            model_over_capacity = true;
            throw *outcome.refusal;
        }
        if (outcome.result == PublishResult::Published)
            model_generation = outcome.generation;
        if (update.reset)
            status_count_reset();
        return {};
    } catch (const SourceError &e) {
        error = e.what();
        hint = e.hint();
    } catch (const Error &e) {
        error = e.what();
        hint = e.hint();
    } catch (const std::exception &e) {
        error = std::string("internal error: ") + e.what();
    }
    if (!hint.empty())
        error += " (" + hint + ")";
    return error;
}

// Logs the outcome of a refresh, in the server log and the topology event log, when it differs
// from the last one logged: a new error, or the first success after an error (`recovered`).
void log_refresh_outcome(const std::string &error, bool recovered, std::string *last_logged_error) {
    if (recovered) {
        ereport(LOG, (errmsg("picoroute: topology refresh succeeded again")));
        log_worker_change(ChangeKind::RefreshRecovered, "", "",
                          last_logged_error->empty() ? "" : "after: " + *last_logged_error);
    } else if (!error.empty() && error != *last_logged_error) {
        ereport(LOG, (errmsg("picoroute: topology refresh failed: %s", error.c_str())));
        log_worker_change(ChangeKind::RefreshFailed, "", "", error);
    }
    *last_logged_error = error;
}

long backoff_ms(int failures) {
    long base = std::max(100L, std::min<long>(setting_refresh_interval, 1000L));
    long wait = base;
    for (int i = 1; i < failures && wait < kMaxBackoffMs; i++)
        wait *= 2;
    return std::min(wait, kMaxBackoffMs);
}

void worker_loop() {
    int failures = 0;
    std::string last_logged_error;
    int last_source = -1;
    std::string last_conninfo;

    while (!ShutdownRequestPending) {
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        std::string conninfo = setting_conninfo ? setting_conninfo : "";
        if (setting_source != last_source || conninfo != last_conninfo) {
            source->reset();
            failures = 0;
            last_source = setting_source;
            last_conninfo = conninfo;
        }

        long wait_ms;
        if (setting_source == SOURCE_PUSH || conninfo.empty()) {
            // Push mode: picoroute_apply_events() publishes. No conninfo: nothing to poll.
            status_set_state(WorkerState::Idle);
            status_set_source("");
            wait_ms = kIdleWaitMs;
        } else {
            wake_pending = false;
            uint64_t seq = status_refresh_begin();
            std::string error = refresh_once();
            bool ok = error.empty();
            status_set_error(error.c_str());
            status_refresh_end(seq, ok);
            if (ok || model_over_capacity) {
                // Over capacity the catalog was read: the next poll comes at the usual interval,
                // and the first whose topology fits publishes it.
                log_refresh_outcome(error, ok && (failures > 0 || !last_logged_error.empty()),
                                    &last_logged_error);
                failures = 0;
                status_set_state(WorkerState::Waiting);
                wait_ms = setting_refresh_interval;
            } else {
                failures++;
                log_refresh_outcome(error, false, &last_logged_error);
                status_set_state(WorkerState::Backoff);
                wait_ms = backoff_ms(failures);
            }
            if (wake_pending)
                wait_ms = 0;  // a refresh was requested while this one ran
        }
        if (ShutdownRequestPending)
            break;
        int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms,
                           PG_WAIT_EXTENSION);
        if (rc & WL_LATCH_SET)
            ResetLatch(MyLatch);
        absorb_signal_barriers();
    }
}

}  // namespace

void register_worker() {
    BackgroundWorker worker;
    memset(&worker, 0, sizeof(worker));
    // A connection to no database puts the worker in the process array, so that
    // pg_terminate_backend() (superusers) and pg_stat_activity see it.
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = 5;
    strlcpy(worker.bgw_library_name, "picoroute", sizeof(worker.bgw_library_name));
    strlcpy(worker.bgw_function_name, "picoroute_worker_main", sizeof(worker.bgw_function_name));
    strlcpy(worker.bgw_name, "picoroute topology worker", sizeof(worker.bgw_name));
    strlcpy(worker.bgw_type, "picoroute topology worker", sizeof(worker.bgw_type));
    RegisterBackgroundWorker(&worker);
}

}  // namespace picoroute::pg

using namespace picoroute::pg;

extern "C" PGDLLEXPORT void picoroute_worker_main(Datum) {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);

    status_worker_started(MyProcPid);
    ereport(LOG, (errmsg("picoroute: topology worker started (source %s)",
                         source_mode_name(setting_source))));
    // Plain pointers with process lifetime: no C++ destructor is pending when the process exits.
    bool failed = false;
    char message[1024] = {0};
    try {
        model = new picoroute::Topology();
        source = new PollSource(on_latch_during_fetch);
        worker_loop();
        delete source;
        source = nullptr;
    } catch (const std::exception &e) {
        failed = true;
        strlcpy(message, e.what(), sizeof(message));
    } catch (...) {
        failed = true;
        strlcpy(message, "unknown exception", sizeof(message));
    }
    status_worker_stopped();
    if (failed)
        ereport(FATAL, (errmsg("picoroute: topology worker failed: %s", message)));
    ereport(LOG, (errmsg("picoroute: topology worker stopped")));
    // Exit code 1: the postmaster starts the worker again after bgw_restart_time when it was
    // terminated alone (pg_terminate_backend); at server shutdown nothing is restarted.
    proc_exit(1);
}
