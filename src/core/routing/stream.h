// When a streamed read falls back from streaming (src/pg/remote/stream.h: rows handed over one at
// a time as they arrive) to running one of its statements again the buffered way, under run_jobs'
// holds, retries and failover; on plain data. The stream does the I/O and asks this.
//
// - A statement whose connection failed (or that a connection's failure met while its rows were
//   read ahead) runs again the buffered way as long as it handed over no row; after a row, running
//   it again would return rows twice: the scan fails (lost mid scan, reports.h).
// - An error answer before any row: Picodata's refusal of a read that must be a leader read goes
//   again as a leader read (leader_reads.h; where the connection cannot say more, as below); an
//   error after which a read is sent again (answer.h, resendable) runs again the buffered way,
//   unless the stream does not retry (a scatter over masters, Retry::Never). Any other answer, and
//   any error after a row, is the scan's answer.
#pragma once
#include "core/firewall.h"
#include "core/routing/answer.h"
#include "core/routing/target.h"

#include <cstddef>

namespace picoroute::routing {

// After the connection of a streamed statement failed, it having handed over `delivered` rows.
enum class StreamFallback {
    Buffered,     // run it again the buffered way
    LostMidScan,  // the scan fails: its rows cannot be read again
};
StreamFallback after_lost_connection(size_t delivered);

// After a streamed statement answered `answer` (an error) having handed over `delivered` rows,
// in a stream that retries as `retry`: what is tried, in this order (neither: the answer is the
// scan's).
struct StreamRetry {
    bool as_leader = false;  // again as a leader read, when the connection can say so
    bool again = false;      // again the buffered way
    bool any() const { return as_leader || again; }
};
StreamRetry after_error_answer(const Answer &answer, size_t delivered, Retry retry);

}  // namespace picoroute::routing
