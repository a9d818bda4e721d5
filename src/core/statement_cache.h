// The policy of a connection's named remote statements: which statement texts are kept prepared
// on an instance and under which names, as a pure class (the glue in src/pg/remote/remote_stmt.cpp
// sends Parse, Bind and DEALLOCATE). The rules:
//
// - A text is prepared the second time the connection runs it (the first time it goes unnamed, so
//   texts that never repeat cost nothing more); later uses execute the named statement.
// - At most `capacity` texts are kept, least recently used evicted first; an evicted text's
//   prepared name is to be closed before the next statement is sent. Capacity 0: every text goes
//   unnamed and the cache empties.
// - A text whose Parse was refused always goes unnamed; one reported invalidated is prepared again
//   (under a new name, the old one closed) at its next use.
// - When the instance refuses a Parse (of a named or of the unnamed statement) because its
//   statement storage is full (Picodata's pg_statement_max, shared by every client of the
//   instance), the connection gives its storage back: every prepared name is to be closed and from
//   then on every text goes unnamed.
#pragma once
#include "core/firewall.h"

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace picoroute {

class StatementCache {
  public:
    struct Use {
        enum class Kind {
            Unnamed,  // send the text unnamed
            Prepare,  // prepare it as `name` (then prepared() or prepare_failed()), then execute
            Execute,  // execute the prepared statement `name`
        };
        Kind kind = Kind::Unnamed;
        std::string name;
    };

    // How to send `sql` now; the text becomes the most recently used.
    Use use(const std::string &sql, size_t capacity);
    // The outcome of a Prepare: the name exists on the instance, or Parse was refused.
    void prepared(const std::string &sql, const std::string &name);
    void prepare_failed(const std::string &sql);
    // The instance refused a Parse for lack of statement storage: every prepared name is to be
    // closed, the cache empties and every later text goes unnamed. True when there was a prepared
    // name to close (closing them makes room: a statement refused so is worth sending again).
    bool storage_full();
    bool is_storage_full() const { return storage_full_; }
    // The instance reported the statement `name` of `sql` invalidated: it is prepared again at its
    // next use. False when the text is no longer cached.
    bool invalidated(const std::string &sql, const std::string &name);

    // The prepared names evicted or replaced since the last call, to close on the instance.
    std::vector<std::string> take_to_close();
    bool has_to_close() const { return !to_close_.empty(); }
    bool contains(const std::string &sql) const { return entries_.count(sql) > 0; }
    size_t size() const { return entries_.size(); }

  private:
    struct Entry {
        std::string name;     // the statement's name on the instance, "" until prepared
        bool stale = false;   // reported invalidated: prepare again before the next use
        bool failed = false;  // Parse was refused: the text always goes unnamed
        std::list<const std::string *>::iterator at;
    };
    // Keeps at most `capacity` texts, evicting the least recently used.
    void shrink(size_t capacity);

    std::unordered_map<std::string, Entry> entries_;  // by statement text
    std::list<const std::string *> order_;            // keys of entries_, most recent first
    std::vector<std::string> to_close_;
    uint64_t next_id_ = 0;
    bool storage_full_ = false;
};

}  // namespace picoroute
