// The shared list behind picoroute_stat_connections: picoroute.max_stat_connections slots, each
// owned by the backend that took it for one of its connections and written by that backend only.
// A slot is taken with one compare-and-swap of its pid (no lock) and freed by writing 0; readers
// copy a slot under its change count (odd while its owner writes), as pg_stat_activity does.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include "pg/stats/store.h"

#include <cstdint>
#include <string_view>

namespace picoroute::pg::stats {

// A copy of a slot, for the view.
struct ConnectionRow {
    int32 pid;
    char address[kAddressBytes];
    char user[NAMEDATALEN];
    char server[NAMEDATALEN];
    TimestampTz since;
    uint32 state;  // ConnectionState
    uint64 statements;
    uint64 prepared;
};

// A free slot taken for this backend and filled; -1 when none is free (or not preloaded).
int32 take_connection_slot(std::string_view address, std::string_view user, std::string_view server,
                           TimestampTz since) noexcept;
void update_connection_slot(int32 index, uint32 state, uint64 statements, uint64 prepared) noexcept;
void free_connection_slot(int32 index) noexcept;

// The slots there are (0 when not preloaded), and a consistent copy of one in use: false when it
// is free.
uint32 connection_slot_count();
bool read_connection_slot(uint32 index, ConnectionRow *out);

}  // namespace picoroute::pg::stats
