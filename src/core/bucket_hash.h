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

uint32_t murmur3_x86_32(const void *data, size_t length, uint32_t seed);

// Accumulates the encoded key, one value after another in sharding-key order.
class KeyEncoder {
  public:
    void add_null();                       // c0
    void add_bool(bool value);             // c2 / c3
    void add_int(int64_t value);           // most compact MessagePack integer, marker included
    void add_uint(uint64_t value);         // same, for values above INT64_MAX
    void add_double(double value);         // cb + big-endian IEEE 754
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
    void clear() { bytes_.clear(); }

  private:
    std::string bytes_;
};

// bucket_count must be >= 1 (Error(OutOfRange) otherwise).
uint32_t bucket_id_for_bytes(std::string_view key_bytes, uint32_t bucket_count);

// Parses a canonical uuid text ("xxxxxxxx-xxxx-...") into bytes; throws Error(InvalidInput).
std::array<uint8_t, 16> parse_uuid(std::string_view text);

}  // namespace picoroute
