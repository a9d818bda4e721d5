// Picodata's bucket id: murmur3_x86_32(key bytes, seed 13) % bucket_count + 1, where the key bytes
// are the sharding-key values encoded as Picodata encodes them (facts, section 3).
#pragma once
#include "core/firewall.h"

#include "core/capabilities.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace picoroute {

inline constexpr uint32_t kBucketHashSeed = 13;

// How a Picodata release line turns a sharding key into the bytes it hashes. Picodata hashes a key
// with its tarantool's key_def (calculate_bucket_id, src/sql/router.rs:489@25.5.10,
// :503@26.1.1: KeyDef::hash -> box_tuple_hash -> tuple_hash_field in tarantool's
// src/box/tuple_hash.cc) over the key values encoded as MessagePack (MsgPackValue), each part
// typed by Value::as_key_def_part: field type double for a double at every release
// (sql-planner/src/ir/value.rs:677@25.5.10 and @26.1.1, sql-ir/src/ir/value.rs:681@26.3.0).
//
// Integers hash as their most compact MessagePack encoding, marker included, at every release:
// test/int/sql/insert.sql:83 expects -9223372036854775808 in bucket 413 of 3000 at 25.5.10,
// 26.1.1, 26.1.6, 26.2.1-rc1, 26.2.1-rc2 and 26.3.0 (d3 + 8 bytes; upstream tarantool 2.11.8's
// marker-less integers, its commit fb4cec57b, would give 73). Picodata's tarantool at the 26.1.0
// pin (721ae188) hashes an integer through the `default:` branch of tuple_hash_field (raw
// MessagePack) and still writes TUPLE_BLOOM_VERSION_V2 bloom filters (fb4cec57b adds V3).
//
// Only doubles differ between the lines:
enum class HashRule {
    // 25.5.x: tuple_hash_field on tarantool branch picodata-25.5 reads a part of field type double
    // as a double and re-encodes it with mp_encode_double: every double is cb + its 8 big-endian
    // IEEE 754 bytes (1.0 -> bucket 2099 of 3000, not the integer's 1934; 1.5 -> 632).
    Picodata25_5,
    // From the 26.1.0 tag (26.1.x, 26.2.1-rc1, 26.2.1-rc2, 26.3.0; CHANGELOG.md at 26.1.1,
    // "Hashing behavior changed for DOUBLE type fields"): Picodata's tarantool 2.11.8 at the 26.1.0
    // pin (tuple_hash.cc@721ae188: tuple_hash_field looks at the MessagePack type only, the field
    // type no longer matters) hashes a finite double with no fractional part in [-2^63, 2^64) as
    // the most compact MessagePack integer equal to it, marker included (1.0 like 1 -> 1934, -0.0
    // like 0, 2^63 as cf 80..00); any other double (fractions, NaN, infinities, beyond that range)
    // as its 8 big-endian IEEE 754 bytes WITHOUT the cb header (hash_mp_double, mp_store_double):
    // 1.5 -> 510.
    Picodata26_1,
};

// The rule of the newest release line: what is assumed of a cluster whose version is not known.
inline constexpr HashRule kNewestHashRule = HashRule::Picodata26_1;

// The rule of a version with these capabilities: 26.1's from the 26.1.0 tag on
// (caps::Capability::IntegralDoubleHash), 25.5's before it and for a version that does not parse.
HashRule hash_rule_for(const caps::CapabilitySet &capabilities);

// The rule's name as the tools and messages spell it, the release line that introduced it:
// "25.5" or "26.1"; parse_hash_rule is its inverse (nullopt for any other text).
const char *hash_rule_name(HashRule rule);
std::optional<HashRule> parse_hash_rule(std::string_view name);

uint32_t murmur3_x86_32(const void *data, size_t length, uint32_t seed);

// Accumulates the encoded key, one value after another in sharding-key order, by the rule of the
// cluster's release line, fixed at construction (every caller says which).
class KeyEncoder {
  public:
    explicit KeyEncoder(HashRule rule) : rule_(rule) {}

    void add_null();                       // c0
    void add_bool(bool value);             // c2 / c3
    void add_int(int64_t value);           // most compact MessagePack integer, marker included
    void add_uint(uint64_t value);         // same, for values above INT64_MAX
    void add_double(double value);         // by rule() (see HashRule)
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
    HashRule rule() const { return rule_; }
    void clear() { bytes_.clear(); }  // keeps the rule

  private:
    std::string bytes_;
    HashRule rule_;
};

// bucket_count must be >= 1 (Error(OutOfRange) otherwise).
uint32_t bucket_id_for_bytes(std::string_view key_bytes, uint32_t bucket_count);

// Parses a canonical uuid text ("xxxxxxxx-xxxx-...") into bytes; throws Error(InvalidInput).
std::array<uint8_t, 16> parse_uuid(std::string_view text);

}  // namespace picoroute
