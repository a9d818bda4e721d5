// Library entry point: defines the settings and, when preloaded, the shared memory and the worker.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"

PG_MODULE_MAGIC;

void _PG_init(void);
}

#include "pg/map_store.h"
#include "pg/settings.h"
#include "pg/worker.h"

void _PG_init(void) {
    picoroute::pg::define_settings();
    if (!process_shared_preload_libraries_in_progress)
        return;  // SQL functions then fail with a hint (require_preloaded)
    picoroute::pg::map_store_install_hooks();
    picoroute::pg::register_worker();
}
