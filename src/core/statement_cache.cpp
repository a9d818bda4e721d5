// The named-statement policy of a connection (see statement_cache.h).
#include "core/statement_cache.h"

namespace picoroute {

void StatementCache::shrink(size_t capacity) {
    while (entries_.size() > capacity) {
        const std::string *key = order_.back();
        order_.pop_back();
        auto it = entries_.find(*key);
        if (!it->second.name.empty())
            to_close_.push_back(it->second.name);
        entries_.erase(it);
    }
}

StatementCache::Use StatementCache::use(const std::string &sql, size_t capacity) {
    Use use;
    if (capacity == 0 || storage_full_) {
        shrink(0);
        return use;
    }
    auto it = entries_.find(sql);
    if (it == entries_.end()) {
        shrink(capacity - 1);
        it = entries_.emplace(sql, Entry()).first;
        order_.push_front(&it->first);
        it->second.at = order_.begin();
        return use;  // a text is prepared when it comes back
    }
    order_.splice(order_.begin(), order_, it->second.at);
    Entry &e = it->second;
    if (e.failed)
        return use;
    if (!e.name.empty() && !e.stale) {
        use.kind = Use::Kind::Execute;
        use.name = e.name;
        return use;
    }
    if (!e.name.empty())
        to_close_.push_back(e.name);  // the invalidated statement
    e.name.clear();
    e.stale = false;
    use.kind = Use::Kind::Prepare;
    use.name = "picoroute_" + std::to_string(++next_id_);
    return use;
}

void StatementCache::prepared(const std::string &sql, const std::string &name) {
    auto it = entries_.find(sql);
    if (it != entries_.end())
        it->second.name = name;
    else
        to_close_.push_back(name);  // evicted meanwhile: nothing will use it
}

void StatementCache::prepare_failed(const std::string &sql) {
    auto it = entries_.find(sql);
    if (it != entries_.end())
        it->second.failed = true;
}

bool StatementCache::storage_full() {
    storage_full_ = true;
    shrink(0);
    return !to_close_.empty();
}

bool StatementCache::invalidated(const std::string &sql, const std::string &name) {
    auto it = entries_.find(sql);
    if (it == entries_.end())
        return false;
    if (it->second.name == name)
        it->second.stale = true;
    return true;
}

std::vector<std::string> StatementCache::take_to_close() {
    std::vector<std::string> names;
    names.swap(to_close_);
    return names;
}

}  // namespace picoroute
