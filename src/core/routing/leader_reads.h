// What a session does after Picodata refused a read for not being a leader read (answer.h,
// leader_read_refusal), on plain strings: the remote layer reads the refusal's primary message and
// the connection's read_preference, and does as told (src/pg/remote/leader_reads.h keeps what the
// session learned and builds the leader's connection parameters).
//
// - A refusal that names sql_preemption is a setting of the cluster: every later read of that
//   server refuses the same way, so the session learns it (its later reads of the server go as
//   leader reads at once). An unlogged table's refusal concerns that table only.
// - The read goes again as a leader read only where the connection named another read_preference
//   (replica, any): one that named the leader, or none (a version without the option,
//   execution_options 'off'), cannot say more, and the refusal is then the answer.
#pragma once
#include "core/firewall.h"

#include <string_view>

namespace picoroute::routing {

// Whether a connection whose read_preference is `read_preference` ("" for none) asks for other
// than the leader: a leader read over it needs read_preference=leader in its startup options.
bool names_other_than_leader(std::string_view read_preference);

// After a leader-read refusal whose primary message is `message`, on a connection whose
// read_preference is `read_preference`.
struct LeaderSwitch {
    bool learn = false;    // the session learns it of the server (sql_preemption)
    bool switch_ = false;  // the read goes again with read_preference=leader
};
LeaderSwitch leader_switch(std::string_view message, std::string_view read_preference);

}  // namespace picoroute::routing
