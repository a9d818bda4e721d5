// When a streamed read falls back to the buffered way (see stream.h).
#include "core/routing/stream.h"

namespace picoroute::routing {

StreamFallback after_lost_connection(size_t delivered) {
    return delivered == 0 ? StreamFallback::Buffered : StreamFallback::LostMidScan;
}

StreamRetry after_error_answer(const Answer &answer, size_t delivered, Retry retry) {
    StreamRetry out;
    if (delivered > 0)
        return out;
    out.as_leader = leader_read_refusal(answer);
    out.again = retry == Retry::Read && resendable(answer, true);
    return out;
}

}  // namespace picoroute::routing
