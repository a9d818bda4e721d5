// What happens after a routed statement could not run: the failover step, on plain data and the
// map of the moment. The remote layer (src/pg/remote/rounds.h) sends and collects; for each
// statement that did not run it asks this what to do next, and does it.
//
// - Before a round: a statement is held, not sent, while its buckets' owner has no usable instance
//   (a switchover) or while a master of its tier is offline and the target would wait for it (a
//   dead master stalls its tier: route decisions in target.h, lua_dispatched).
// - After a round: an answer that refused a statement before running it is a failure to send
//   again where that cannot apply anything twice (a read, or a write on one replicaset); any other
//   error is the answer, and a write's DETAIL says what the error proves. A scatter over masters
//   gives up at once on any failure (no partial result), a write lost after it was sent too (it
//   may have been applied: never sent twice).
// - Then, per failed statement, the Failover steps: send again where the map now puts its
//   buckets, or wait for the map (a switchover under way), until it runs or
//   picoroute.failover_wait has passed; then once more (through a coordinator when the map still
//   puts the buckets on the instance that failed, not at all when the target would wait for a
//   dead master); then give up, with the report and the truth about the write.
#pragma once
#include "core/firewall.h"
#include "core/routing/answer.h"
#include "core/routing/reports.h"
#include "core/routing/target.h"
#include "core/routing/write_log.h"
#include "core/snapshot.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace picoroute::routing {

// Instants and durations, in microseconds (PostgreSQL's TimestampTz).
using Micros = int64_t;

// The map as a statement's failover sees it at one step (read again at each step: a refresh
// replaces it).
struct MapScope {
    const SnapshotView *view = nullptr;
    // The statement's tier by name ("" for none: the catalog), as a refresh may shift the indexes
    // of tiers (sorted by name, a new one moves the others).
    std::string tier;
    ReadPref pref = ReadPref::Leader;
    uint64_t salt = 0;  // the session's: one session keeps one choice among candidates
    // The version whose capabilities decide Picodata's local path: the server's picodata_version
    // option, "" for the version the map detects.
    std::string version;

    int32_t tier_index() const;
    // Picodata runs a statement whose buckets all belong to the replicaset of the master it is
    // sent to on that master, without Lua (26.1.1+).
    bool local_execution() const;
};

// ---- before a round -------------------------------------------------------------------------

// The replicaset (its name) whose missing master would make the Picodata instance `target` wait
// before running a statement (`sharded`: on a sharded table of the map's tier), or "".
std::string stalling_master(const MapScope &map, const Target &target, bool sharded);

// Whether a statement for `target` is held (not sent now): a coordinator's statement on buckets
// whose owner has no usable instance (awaiting_master), or one a Picodata instance would make wait
// for a dead master (`stalled`).
struct Hold {
    bool held = false;
    std::string stalled;  // the replicaset that stalls it; "" when its own buckets have no master
};
Hold hold(const MapScope &map, const Target &target, bool sharded);

// The round in which each statement is sent: a statement to an instance that an earlier one also
// goes to (a scatter's master in several statements) waits for that one's answer, one connection
// each. *rounds: how many rounds.
std::vector<size_t> send_rounds(const std::vector<std::string_view> &addresses, size_t *rounds);

// ---- after a round --------------------------------------------------------------------------

// Why a statement did not run.
struct Failure {
    enum class Kind {
        Unsent,   // nothing of it left this process (no connection, a failed send)
        Held,     // not sent: its buckets' owner has no usable instance (a switchover)
        Stalled,  // not sent: replicaset `stalled` of its tier has no master, the target would wait
        Refused,  // the instance refused it before running it (`message`: the refusal)
        Lost,     // the connection broke after it was sent: it may have run
    };
    Kind kind = Kind::Unsent;
    std::string address;  // the instance ("" when not sent: Held, Stalled)
    std::string message;  // libpq's text, or the refusal
    std::string stalled;  // Stalled: the replicaset

    bool sent() const { return kind == Kind::Lost; }
};

// How a failure reads in the error that ends its retries.
std::string first_failure(const Failure &failure);
// " Instances that could not run it: a (may have applied it) b (refused it before running it)
// ...", "" for none.
std::string could_not_run(const std::vector<Failure> &failures);

// An answer that refused a statement before running it, as a failure to send again where that
// cannot apply anything twice: a read, or a `write` whose buckets all belong to one replicaset (a
// write over several may have been applied by the others before one refused it). None for any
// other answer, and never for a scatter over masters.
std::optional<Failure> refusal(const MapScope &map, const Target &target, const Answer &answer,
                               Retry retry, bool write);

// The DETAIL a write's remote error gets: what the instance `address` that answered it left
// (recorded in `log`: an outcome the answer does not prove is unknown), what the log holds, and
// the instances that could not run their part.
std::string write_error_detail(WriteLog &log, const std::string &address, bool spans,
                               const Answer &answer, const std::vector<Failure> &failures);

// A failure of a round that ends the statement at once: any failure of a scatter over masters,
// and a write (Retry::Write) lost after it was sent, which `log` then holds unknown. nullopt: its
// failover begins.
std::optional<Report> final_failure(const Failure &failure, Retry retry, const Target &target,
                                    WriteLog *log);

// ---- the failover of one statement ------------------------------------------------------------

// What became of an attempt a Send step asked for.
struct Attempt {
    enum class Kind {
        Answered,  // an answer came (`answer`, an error included)
        Unsent,    // it could not be sent (`address`, `message`)
        Lost,      // the connection broke after it was sent
    };
    Kind kind = Kind::Answered;
    std::string address;
    std::string message;
    Answer answer;
};

// What the remote layer does next.
struct Step {
    enum class Kind {
        Send,    // send the statement to `target` (`refusals`: a refusal before running is a
                 // failure to send again, not the answer)
        Wait,    // sleep a little and refresh the map, within `until`; then next()
        Next,    // ask next() at once
        Done,    // it ran: its answer is the statement's (an error gets error_detail())
        GiveUp,  // raise `report`
    };
    Kind kind = Kind::Next;
    Target target;
    bool refusals = false;
    Micros until = 0;
    Report report;
};

// The failover of one statement that failed with `failure` when sent to `first`.
class Failover {
  public:
    // `write`: a write whose outcome `log` records; `spans`: a write over several replicasets;
    // `sharded`: a statement on a sharded table (a dead master of its tier may stall it);
    // `since`: when its failover began; `wait`: picoroute.failover_wait, in milliseconds.
    Failover(bool write, bool spans, bool sharded, const Target &first, const Failure &failure,
             Micros since, int64_t wait);

    // The next step by the map of the moment `now`: Send, Wait, or GiveUp.
    Step next(const MapScope &map, Micros now, const WriteLog *log);
    // After a Send: Done, GiveUp, Wait or Next.
    Step attempted(const Attempt &attempt, Micros now, WriteLog *log);
    // The DETAIL of the remote error a Done answer carries: how long it was sent again, and for a
    // write what that answer left (recorded in `log`) and what the log holds.
    std::string error_detail(Micros now, WriteLog *log, const Answer &answer);
    // The statement's target now (where the last Send sent it).
    const Target &target() const { return current_; }

  private:
    Step give_up(Report report) const;
    Step wait() const;

    bool write_, spans_, sharded_;
    Target first_;    // its buckets decide where it goes next
    Target current_;  // where it was sent last
    Failure failure_;
    Micros since_, deadline_;
    std::string failed_;  // the address that failed last
    std::string why_;     // and why
    bool lost_ = false;   // a read whose answer was lost: asked once more, then a coordinator
    bool last_ = false;   // the attempt under way is the last one
    bool refusals_ = false;
};

}  // namespace picoroute::routing
