// picoroute_hash: prints the Picodata bucket id of a sharding key given on the command line.
//
//   picoroute_hash [--count N] [--hex] [--rule 25.5|26.1] VALUE...
//
// Each VALUE is one key column, in key order: int:N (signed or up to 2^64-1), text:STRING,
// decimal:TEXT, uuid:UUID, bool:true|false, null, double:NUMBER,
// datetime:EPOCH[,NSEC[,TZOFFSET[,TZINDEX]]]. The bucket count defaults to 3000 (Picodata's
// default). With --hex the key bytes are printed as hex on a line of their own before the bucket
// id. --rule chooses the hashing rule of a Picodata release line (core/bucket_hash.h HashRule, the
// rules differ for doubles only): 25.5 (the default) or 26.1 (from the 26.1.0 tag on). Bad
// arguments exit with status 2 and a message on stderr.
#include "core/bucket_hash.h"
#include "core/errors.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

const char kUsage[] =
    "usage: picoroute_hash [--count N] [--hex] [--rule 25.5|26.1] VALUE...\n"
    "  VALUE: int:N text:S decimal:D uuid:U bool:true|false null double:X\n"
    "         datetime:EPOCH[,NSEC[,TZOFFSET[,TZINDEX]]]\n";

int64_t parse_signed(const std::string &text, int64_t min, int64_t max, const std::string &what) {
    if (text.empty() || text.find_first_of(" \t\n") != std::string::npos)
        throw UsageError("invalid " + what + " \"" + text + "\"");
    errno = 0;
    char *end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || v < min || v > max)
        throw UsageError("invalid " + what + " \"" + text + "\"");
    return v;
}

void add_int(picoroute::KeyEncoder &enc, const std::string &text) {
    if (!text.empty() && text[0] != '-' && text[0] != '+') {
        // Non-negative: may go beyond INT64_MAX up to UINT64_MAX.
        if (text.find_first_not_of("0123456789") != std::string::npos)
            throw UsageError("invalid integer \"" + text + "\"");
        errno = 0;
        char *end = nullptr;
        const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
        if (*end != '\0' || errno == ERANGE)
            throw UsageError("integer \"" + text + "\" does not fit in 64 bits");
        enc.add_uint(v);
        return;
    }
    enc.add_int(parse_signed(text, std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max(), "integer"));
}

void add_double(picoroute::KeyEncoder &enc, const std::string &text) {
    if (text.empty() || text.find_first_of(" \t\n") != std::string::npos)
        throw UsageError("invalid double \"" + text + "\"");
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (*end != '\0')
        throw UsageError("invalid double \"" + text + "\"");
    enc.add_double(v);
}

void add_datetime(picoroute::KeyEncoder &enc, const std::string &text) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        parts.push_back(text.substr(start, comma - start));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    if (parts.size() > 4)
        throw UsageError("invalid datetime \"" + text + "\"");
    const int64_t epoch = parse_signed(parts[0], std::numeric_limits<int64_t>::min(),
                                       std::numeric_limits<int64_t>::max(), "datetime seconds");
    int64_t nsec = 0, tzoffset = 0, tzindex = 0;
    if (parts.size() > 1)
        nsec = parse_signed(parts[1], 0, 999999999, "datetime nanoseconds");
    if (parts.size() > 2)
        tzoffset = parse_signed(parts[2], INT16_MIN, INT16_MAX, "datetime tz offset");
    if (parts.size() > 3)
        tzindex = parse_signed(parts[3], INT16_MIN, INT16_MAX, "datetime tz index");
    enc.add_datetime(epoch, static_cast<int32_t>(nsec), static_cast<int16_t>(tzoffset),
                     static_cast<int16_t>(tzindex));
}

void add_value(picoroute::KeyEncoder &enc, const std::string &arg) {
    if (arg == "null") {
        enc.add_null();
        return;
    }
    const size_t colon = arg.find(':');
    if (colon == std::string::npos)
        throw UsageError("value \"" + arg + "\" needs a type prefix such as int: or text:");
    const std::string kind = arg.substr(0, colon);
    const std::string text = arg.substr(colon + 1);
    if (kind == "int") {
        add_int(enc, text);
    } else if (kind == "text") {
        enc.add_text(text);
    } else if (kind == "decimal") {
        enc.add_decimal(text);
    } else if (kind == "uuid") {
        enc.add_uuid(picoroute::parse_uuid(text));
    } else if (kind == "bool") {
        if (text != "true" && text != "false")
            throw UsageError("bool must be true or false, not \"" + text + "\"");
        enc.add_bool(text == "true");
    } else if (kind == "double") {
        add_double(enc, text);
    } else if (kind == "datetime") {
        add_datetime(enc, text);
    } else {
        throw UsageError("unknown value type \"" + kind + "\"");
    }
}

picoroute::HashRule parse_rule(const std::string &text) {
    if (std::optional<picoroute::HashRule> rule = picoroute::parse_hash_rule(text))
        return *rule;
    throw UsageError("unknown hashing rule \"" + text + "\" (25.5 or 26.1)");
}

std::string to_hex(const std::string &bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

}  // namespace

int main(int argc, char **argv) {
    try {
        uint32_t count = 3000;
        bool show_hex = false;
        auto rule = picoroute::HashRule::Picodata25_5;
        std::vector<std::string> values;
        for (int i = 1; i < argc; ++i) {
            const std::string arg = argv[i];
            if (arg == "--count") {
                if (i + 1 >= argc)
                    throw UsageError("--count needs a number");
                count = static_cast<uint32_t>(parse_signed(argv[++i], 1, UINT32_MAX, "--count"));
            } else if (arg == "--hex") {
                show_hex = true;
            } else if (arg == "--rule") {
                if (i + 1 >= argc)
                    throw UsageError("--rule needs a rule");
                rule = parse_rule(argv[++i]);
            } else if (arg == "--help" || arg == "-h") {
                std::cout << kUsage;
                return 0;
            } else if (arg.rfind("--", 0) == 0) {
                throw UsageError("unknown option \"" + arg + "\"");
            } else {
                values.push_back(arg);
            }
        }
        if (values.empty())
            throw UsageError("no key values given");
        picoroute::KeyEncoder enc(rule);
        for (const std::string &value : values)
            add_value(enc, value);
        const uint32_t bucket = picoroute::bucket_id_for_bytes(enc.bytes(), count);
        if (show_hex)
            std::cout << to_hex(enc.bytes()) << "\n";
        std::cout << bucket << "\n";
        return 0;
    } catch (const UsageError &e) {
        std::cerr << "picoroute_hash: " << e.what() << "\n" << kUsage;
    } catch (const picoroute::Error &e) {
        std::cerr << "picoroute_hash: " << e.what();
        if (!e.hint().empty())
            std::cerr << " (" << e.hint() << ")";
        std::cerr << "\n";
    }
    return 2;
}
