// Library entry point: defines the settings, installs the batched-join planner hook and, when
// preloaded, the shared memory (the map store's slots, the worker's status block, the table of
// route-check verdicts, the topology event log and the statistics, each with its own size and
// initialisation), the worker and the hooks that make a failed write say what it wrote
// (pg/remote/write_ledger.h).
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

PG_MODULE_MAGIC;

void _PG_init(void);
}

#include "pg/batch_join/batch_join.h"
#include "pg/fdw/plan_work.h"
#include "pg/map_store.h"
#include "pg/remote/write_ledger.h"
#include "pg/route_checks.h"
#include "pg/settings.h"
#include "pg/stats/connections.h"
#include "pg/stats/stats.h"
#include "pg/topology_log.h"
#include "pg/worker.h"
#include "pg/worker_status.h"

namespace {

shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

void request_shmem() {
    if (prev_shmem_request_hook)
        prev_shmem_request_hook();
    Size size =
        add_size(picoroute::pg::map_store_shmem_size(), picoroute::pg::worker_status_shmem_size());
    size = add_size(size, picoroute::pg::topology_log_shmem_size());
    size = add_size(size, picoroute::pg::stats::shmem_size());
    size = add_size(size, picoroute::pg::stats::connection_slots_shmem_size());
    size = add_size(size, picoroute::pg::route_checks_shmem_size());
    RequestAddinShmemSpace(size);
    picoroute::pg::map_store_request_lock();
    picoroute::pg::topology_log_request_lock();
}

void startup_shmem() {
    if (prev_shmem_startup_hook)
        prev_shmem_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    picoroute::pg::map_store_shmem_init();
    picoroute::pg::worker_status_shmem_init();
    picoroute::pg::route_checks_shmem_init();
    picoroute::pg::topology_log_shmem_init();
    picoroute::pg::stats::shmem_init();
    picoroute::pg::stats::connection_slots_shmem_init();
    LWLockRelease(AddinShmemInitLock);
}

}  // namespace

void _PG_init(void) {
    picoroute::pg::define_settings();
    picoroute::pg::batch_join::register_batched_join();
    if (!process_shared_preload_libraries_in_progress)
        return;  // SQL functions then fail with a hint (require_preloaded)
    prev_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = request_shmem;
    prev_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_shmem;
    picoroute::pg::register_worker();
    picoroute::pg::remote::install_write_ledger_hooks();
    picoroute::pg::fdw::install_plan_work_hook();
}
