// Topology notification JSON (facts, section 5) -> events.
#include "core/notification.h"

#include "core/errors.h"

#include <nlohmann/json.hpp>

#include <limits>

namespace picoroute {

namespace {

using nlohmann::json;

// Reads the keys of one notification object; every error names the element and the key.
class Element {
  public:
    Element(const json &object, size_t index) : object_(object), index_(index) {}

    [[noreturn]] void fail(const std::string &key, const std::string &problem) const {
        throw Error(ErrorKind::InvalidInput,
                    "element " + std::to_string(index_) + ": key \"" + key + "\" " + problem);
    }

    // The value under `key` in `object`, or nullptr.
    const json *find(const json &object, const std::string &key) const {
        auto it = object.find(key);
        return it == object.end() ? nullptr : &*it;
    }

    std::string required_string(const std::string &key) const {
        std::optional<std::string> value = optional_string(key);
        if (!value) {
            fail(key, "is missing");
        }
        if (value->empty()) {
            fail(key, "must be a non-empty string");
        }
        return *value;
    }

    // Absent -> nullopt; present but not a string (null included) -> error.
    std::optional<std::string> optional_string(const std::string &key) const {
        const json *value = find(object_, key);
        if (value == nullptr) {
            return std::nullopt;
        }
        if (!value->is_string()) {
            fail(key, "must be a string");
        }
        return value->get<std::string>();
    }

    // A non-empty string when present.
    std::optional<std::string> optional_nonempty(const std::string &key) const {
        std::optional<std::string> value = optional_string(key);
        if (value && value->empty()) {
            fail(key, "must be a non-empty string");
        }
        return value;
    }

    static std::optional<uint64_t> as_unsigned(const json &value) {
        if (value.is_number_unsigned()) {
            return value.get<uint64_t>();
        }
        if (value.is_number_integer() && value.get<int64_t>() >= 0) {
            return static_cast<uint64_t>(value.get<int64_t>());
        }
        return std::nullopt;
    }

    uint32_t bucket_count(const std::string &key) const {
        const json *value = find(object_, key);
        if (value == nullptr) {
            fail(key, "is missing");
        }
        std::optional<uint64_t> number = as_unsigned(*value);
        if (!number || *number > std::numeric_limits<uint32_t>::max()) {
            fail(key, "must be a non-negative integer that fits 32 bits");
        }
        return static_cast<uint32_t>(*number);
    }

    // bucket_id {start, end}: both positive integers, start <= end.
    std::pair<uint32_t, uint32_t> bucket_range() const {
        const json *range = find(object_, "bucket_id");
        if (range == nullptr) {
            fail("bucket_id", "is missing");
        }
        if (!range->is_object()) {
            fail("bucket_id", "must be an object {\"start\": N, \"end\": M}");
        }
        auto bound = [&](const char *name) {
            const std::string key = std::string("bucket_id.") + name;
            const json *value = find(*range, name);
            if (value == nullptr) {
                fail(key, "is missing");
            }
            std::optional<uint64_t> number = as_unsigned(*value);
            if (!number || *number == 0 || *number > std::numeric_limits<uint32_t>::max()) {
                fail(key, "must be a positive integer");
            }
            return static_cast<uint32_t>(*number);
        };
        uint32_t start = bound("start");
        uint32_t end = bound("end");
        if (start > end) {
            fail("bucket_id",
                 "has start " + std::to_string(start) + " greater than end " + std::to_string(end));
        }
        return {start, end};
    }

  private:
    const json &object_;
    size_t index_;
};

Event decode(const json &object, size_t index) {
    if (!object.is_object()) {
        throw Error(ErrorKind::InvalidInput,
                    "element " + std::to_string(index) + ": a notification must be a JSON object");
    }
    Element element(object, index);
    const std::string op_text = element.required_string("op");
    Op op;
    if (op_text == "replace") {
        op = Op::Replace;
    } else if (op_text == "delete") {
        op = Op::Delete;
    } else {
        element.fail("op", "has unknown value \"" + op_text + "\" (expected replace or delete)");
    }
    const std::string map = element.required_string("map");

    // The fields are read in the order of the event's members (a braced initialiser is evaluated
    // left to right), so the first bad field is the one reported.
    if (map == "replicaset") {
        return ReplicasetEvent{
            op, element.required_string("replicaset_uuid"), element.optional_nonempty("tier"),
            element.optional_string("current_master_uuid"), element.optional_string("name")};
    }
    if (map == "instance") {
        return InstanceEvent{op,
                             element.required_string("instance_uuid"),
                             element.optional_nonempty("replicaset_uuid"),
                             element.optional_string("current_state"),
                             element.optional_string("address"),
                             element.optional_string("name"),
                             element.optional_nonempty("picodata_version")};
    }
    if (map == "bucket") {
        BucketEvent event;
        event.op = op;
        event.tier = element.required_string("tier");
        event.state = element.optional_string("state").value_or("active");
        std::tie(event.start, event.end) = element.bucket_range();
        if (op == Op::Replace) {
            event.current_replicaset_uuid = element.required_string("current_replicaset_uuid");
        } else {
            event.current_replicaset_uuid =
                element.optional_nonempty("current_replicaset_uuid").value_or("");
        }
        return event;
    }
    if (map == "tier") {
        if (op != Op::Replace) {
            element.fail("op", "must be \"replace\" for map \"tier\" (tiers cannot be deleted)");
        }
        TierEvent event;
        event.name = element.required_string("name");
        event.bucket_count = element.bucket_count("bucket_count");
        return event;
    }
    element.fail(
        "map", "has unknown value \"" + map + "\" (expected replicaset, instance, bucket or tier)");
}

}  // namespace

std::vector<Event> events_from_notification(std::string_view text, size_t first_index) {
    json doc = json::parse(text.begin(), text.end(), nullptr, false);
    if (doc.is_discarded()) {
        throw Error(ErrorKind::InvalidInput, "topology notification is not valid JSON");
    }
    std::vector<Event> events;
    if (doc.is_array()) {
        events.reserve(doc.size());
        for (size_t i = 0; i < doc.size(); ++i) {
            events.push_back(decode(doc[i], first_index + i));
        }
    } else {
        events.push_back(decode(doc, first_index));
    }
    return events;
}

}  // namespace picoroute
