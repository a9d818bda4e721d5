#include "core/session_options.h"

namespace picoroute {

std::string startup_options(std::string_view read_preference, bool stmt_invalidation) {
    std::string out;
    if (!read_preference.empty())
        out = "read_preference=" + std::string(read_preference);
    if (stmt_invalidation)
        out += std::string(out.empty() ? "" : ",") + "pico_stmt_invalidation=true";
    return out;
}

std::string with_read_preference(std::string_view options, std::string_view read_preference) {
    constexpr std::string_view kName = "read_preference=";
    std::string out;
    while (!options.empty()) {
        size_t comma = options.find(',');
        std::string_view item = options.substr(0, comma);
        options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
        if (item.empty() || item.substr(0, kName.size()) == kName)
            continue;
        out += std::string(out.empty() ? "" : ",") + std::string(item);
    }
    return out + (out.empty() ? "" : ",") + std::string(kName) + std::string(read_preference);
}

}  // namespace picoroute
