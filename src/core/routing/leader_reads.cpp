// After a leader-read refusal (see leader_reads.h).
#include "core/routing/leader_reads.h"

namespace picoroute::routing {

bool names_other_than_leader(std::string_view read_preference) {
    return !read_preference.empty() && read_preference != "leader";
}

LeaderSwitch leader_switch(std::string_view message, std::string_view read_preference) {
    LeaderSwitch out;
    out.learn = message.find("sql_preemption") != std::string_view::npos;
    out.switch_ = names_other_than_leader(read_preference);
    return out;
}

}  // namespace picoroute::routing
