// One-line descriptions of topology events, for logs and error messages.
#include "core/events.h"

#include <sstream>

namespace picoroute {

namespace {

const char *op_name(Op op) {
    return op == Op::Replace ? "replace" : "delete";
}

void put_optional(std::ostringstream &out, const char *key,
                  const std::optional<std::string> &value) {
    if (value) {
        out << ' ' << key << "=\"" << *value << '"';
    }
}

struct Describer {
    std::ostringstream &out;

    void operator()(const ReplicasetEvent &e) const {
        out << "replicaset " << op_name(e.op) << " uuid=\"" << e.replicaset_uuid << '"';
        put_optional(out, "name", e.name);
        put_optional(out, "tier", e.tier);
        put_optional(out, "master", e.current_master_uuid);
    }
    void operator()(const InstanceEvent &e) const {
        out << "instance " << op_name(e.op) << " uuid=\"" << e.instance_uuid << '"';
        put_optional(out, "name", e.name);
        put_optional(out, "replicaset", e.replicaset_uuid);
        put_optional(out, "state", e.current_state);
        put_optional(out, "address", e.address);
        put_optional(out, "version", e.picodata_version);
    }
    void operator()(const BucketEvent &e) const {
        out << "bucket " << op_name(e.op) << " tier=\"" << e.tier << "\" range=[" << e.start << ", "
            << e.end << ']';
        if (e.op == Op::Replace) {
            out << " replicaset=\"" << e.current_replicaset_uuid << '"';
            if (!e.state.empty()) {
                out << " state=\"" << e.state << '"';
            }
        }
    }
    void operator()(const TierEvent &e) const {
        out << "tier name=\"" << e.name << "\" bucket_count=" << e.bucket_count;
        if (e.is_default.value_or(false)) {
            out << " default";
        }
    }
};

}  // namespace

std::string describe(const Event &event) {
    std::ostringstream out;
    std::visit(Describer{out}, event);
    return out.str();
}

}  // namespace picoroute
