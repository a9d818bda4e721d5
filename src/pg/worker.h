// The background worker that keeps the shared topology map up to date.
#pragma once

namespace picoroute::pg {

// Registers the worker with the postmaster (call from _PG_init while preloading).
void register_worker();

// Set when the latch was set during a network wait: a refresh was requested meanwhile.
extern bool worker_wake_pending;

// Answers pending process-signal barriers (call after every wake-up of the latch).
void absorb_signal_barriers();

}  // namespace picoroute::pg

extern "C" {
// Entry point named in the worker registration.
PGDLLEXPORT void picoroute_worker_main(Datum arg);
}
