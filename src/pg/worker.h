// The background worker that keeps the shared topology map up to date.
#pragma once

namespace picoroute::pg {

// Registers the worker with the postmaster (call from _PG_init while preloading).
void register_worker();

}  // namespace picoroute::pg

extern "C" {
// Entry point named in the worker registration.
PGDLLEXPORT void picoroute_worker_main(Datum arg);
}
