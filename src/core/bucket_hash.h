// Picodata's bucket id: murmur3_x86_32(key bytes, seed 13) % bucket_count + 1, where the key bytes
// are the sharding-key values encoded as Picodata encodes them (facts, section 3).
#pragma once
#include "core/firewall.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace picoroute {

inline constexpr uint32_t kBucketHashSeed = 13;

// How a double key value becomes key bytes. Picodata changed it in 26.1.1 (a breaking change in its
// CHANGELOG): its tarantool's tuple hash (src/box/tuple_hash.cc, tuple_hash_field) no longer
// re-encodes every value of a double key part as a MessagePack double. Which rule a cluster uses
// depends on its version; choosing it is the caller's business.
enum class DoubleHashRule {
    // Up to 25.x (the 26.1 branch has the new rule from its 26.1.0 tag, first released in 26.1.1;
    // core/capabilities.cpp): always cb + the 8 big-endian bytes of the IEEE 754 value (2.0 and
    // -0.0
    // included: 1.0 hashes to bucket 2099 of 3000, not the integer's 1934).
    Ieee754,
    // 26.1 and later: a finite integral value v with -2^63 <= v < 2^64 is encoded as the most
    // compact MessagePack integer equal to it (unsigned form for v >= 0, so -0.0 is 0 and 2^63 is
    // cf 80..00; signed form below 0, down to d3 80..00 for -2^63); so 1.0 hashes like the integer
    // 1. NaN, the infinities, fractions and integral values outside that range stay cb + IEEE 754.
    IntegralAsInteger,
};

// The rule's name as the tools and messages spell it: "ieee754" or "integral-as-integer".
const char *double_hash_rule_name(DoubleHashRule rule);

uint32_t murmur3_x86_32(const void *data, size_t length, uint32_t seed);

// Accumulates the encoded key, one value after another in sharding-key order. Doubles are encoded
// by the encoder's rule, fixed at construction; the default is 25.5's rule.
class KeyEncoder {
  public:
    KeyEncoder() = default;
    explicit KeyEncoder(DoubleHashRule double_rule) : double_rule_(double_rule) {}

    void add_null();                       // c0
    void add_bool(bool value);             // c2 / c3
    void add_int(int64_t value);           // most compact MessagePack integer, marker included
    void add_uint(uint64_t value);         // same, for values above INT64_MAX
    void add_double(double value);         // by double_rule() (see DoubleHashRule)
    void add_text(std::string_view utf8);  // raw bytes, no header
    // A decimal from its text form ("-12.340", "1e3" is rejected): MessagePack ext type 1 with
    // scale and packed BCD, scale preserved (no normalisation). Throws Error(InvalidInput) for text
    // that is not a plain decimal number, or Error(OutOfRange) beyond 38 significant digits.
    void add_decimal(std::string_view text);
    void add_uuid(const std::array<uint8_t, 16> &bytes);  // d8 02 + canonical byte order
    // Tarantool datetime (ext type 4): seconds since the epoch, nanoseconds, tz offset in minutes,
    // tz index.
    void add_datetime(int64_t epoch_seconds, int32_t nanoseconds = 0, int16_t tz_offset = 0,
                      int16_t tz_index = 0);

    const std::string &bytes() const { return bytes_; }
    DoubleHashRule double_rule() const { return double_rule_; }
    void clear() { bytes_.clear(); }  // keeps the rule

  private:
    std::string bytes_;
    DoubleHashRule double_rule_ = DoubleHashRule::Ieee754;
};

// bucket_count must be >= 1 (Error(OutOfRange) otherwise).
uint32_t bucket_id_for_bytes(std::string_view key_bytes, uint32_t bucket_count);

// Parses a canonical uuid text ("xxxxxxxx-xxxx-...") into bytes; throws Error(InvalidInput).
std::array<uint8_t, 16> parse_uuid(std::string_view text);

}  // namespace picoroute
