// Picodata's bucket id: the key encodings of facts section 3 and MurmurHash3_x86_32.
#include "core/bucket_hash.h"

#include "core/errors.h"

#include <cmath>
#include <cstring>

namespace picoroute {

namespace {

constexpr size_t kMaxDecimalDigits = 38;  // Tarantool's DECIMAL_MAX_DIGITS
constexpr int8_t kExtDecimal = 1;
constexpr int8_t kExtUuid = 2;
constexpr int8_t kExtDatetime = 4;

uint32_t rotl32(uint32_t x, int r) {
    return (x << r) | (x >> (32 - r));
}

uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bU;
    h ^= h >> 13;
    h *= 0xc2b2ae35U;
    h ^= h >> 16;
    return h;
}

// A 4-byte block read as the little-endian integer the reference implementation sees on x86.
// memcpy into a byte array keeps the read free of alignment and aliasing concerns, and assembling
// the value from bytes gives the same result on any host byte order.
uint32_t load_le32(const uint8_t *p) {
    uint8_t b[4];
    std::memcpy(b, p, sizeof b);
    return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
}

void put_byte(std::string &out, uint8_t b) {
    out.push_back(static_cast<char>(b));
}

void put_be(std::string &out, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i)
        put_byte(out, static_cast<uint8_t>(v >> (8 * i)));
}

void put_le(std::string &out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
        put_byte(out, static_cast<uint8_t>(v >> (8 * i)));
}

void put_uint(std::string &out, uint64_t v) {
    if (v <= 0x7f) {
        put_byte(out, static_cast<uint8_t>(v));
    } else if (v <= 0xff) {
        put_byte(out, 0xcc);
        put_be(out, v, 1);
    } else if (v <= 0xffff) {
        put_byte(out, 0xcd);
        put_be(out, v, 2);
    } else if (v <= 0xffffffffULL) {
        put_byte(out, 0xce);
        put_be(out, v, 4);
    } else {
        put_byte(out, 0xcf);
        put_be(out, v, 8);
    }
}

void put_int(std::string &out, int64_t v) {
    if (v >= 0) {
        put_uint(out, static_cast<uint64_t>(v));
        return;
    }
    // Two's complement bit pattern of v, truncated to the chosen width below.
    const uint64_t bits = static_cast<uint64_t>(v);
    if (v >= -32) {
        put_byte(out, static_cast<uint8_t>(bits));  // negative fixint 0xe0..0xff
    } else if (v >= INT8_MIN) {
        put_byte(out, 0xd0);
        put_be(out, bits, 1);
    } else if (v >= INT16_MIN) {
        put_byte(out, 0xd1);
        put_be(out, bits, 2);
    } else if (v >= INT32_MIN) {
        put_byte(out, 0xd2);
        put_be(out, bits, 4);
    } else {
        put_byte(out, 0xd3);
        put_be(out, bits, 8);
    }
}

// MessagePack extension header and type byte; the payload follows.
void put_ext_header(std::string &out, int8_t type, size_t length) {
    switch (length) {
        case 1:
            put_byte(out, 0xd4);
            break;
        case 2:
            put_byte(out, 0xd5);
            break;
        case 4:
            put_byte(out, 0xd6);
            break;
        case 8:
            put_byte(out, 0xd7);
            break;
        case 16:
            put_byte(out, 0xd8);
            break;
        default:
            if (length <= 0xff) {
                put_byte(out, 0xc7);
                put_be(out, length, 1);
            } else if (length <= 0xffff) {
                put_byte(out, 0xc8);
                put_be(out, length, 2);
            } else {
                put_byte(out, 0xc9);
                put_be(out, length, 4);
            }
    }
    put_byte(out, static_cast<uint8_t>(type));
}

// The bounds of Picodata's integral range for doubles, both exact as doubles: -2^63 is included,
// 2^64 is not (the largest double below it is 2^64 - 2048).
constexpr double kTwoPow63 = 9223372036854775808.0;
constexpr double kTwoPow64 = 18446744073709551616.0;

// 26.1's rule for an integral double: true, with the integer written, when `value` is a finite
// integral double in [-2^63, 2^64) (tuple_hash_field@721ae188: isfinite, modf, exp2(63), exp2(64)).
// -0.0 compares equal to 0 and takes the unsigned branch, as there (val >= 0). NaN fails every
// comparison; the infinities fail the range test.
bool put_integral_double(std::string &out, double value) {
    if (!(value >= -kTwoPow63 && value < kTwoPow64) || std::trunc(value) != value)
        return false;
    if (value >= 0) {
        put_uint(out, static_cast<uint64_t>(value));
    } else {
        put_int(out, static_cast<int64_t>(value));
    }
    return true;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

std::string quoted(std::string_view text) {
    return "\"" + std::string(text) + "\"";
}

}  // namespace

uint32_t murmur3_x86_32(const void *data, size_t length, uint32_t seed) {
    const auto *bytes = static_cast<const uint8_t *>(data);
    constexpr uint32_t c1 = 0xcc9e2d51U;
    constexpr uint32_t c2 = 0x1b873593U;
    uint32_t h = seed;

    const size_t nblocks = length / 4;
    for (size_t i = 0; i < nblocks; ++i) {
        uint32_t k = load_le32(bytes + 4 * i);
        k *= c1;
        k = rotl32(k, 15);
        k *= c2;
        h ^= k;
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64U;
    }

    const uint8_t *tail = bytes + 4 * nblocks;
    uint32_t k = 0;
    switch (length & 3) {
        case 3:
            k ^= uint32_t(tail[2]) << 16;
            [[fallthrough]];
        case 2:
            k ^= uint32_t(tail[1]) << 8;
            [[fallthrough]];
        case 1:
            k ^= tail[0];
            k *= c1;
            k = rotl32(k, 15);
            k *= c2;
            h ^= k;
    }

    // The reference mixes in the length as a 32-bit int; keys are far shorter than 4 GiB.
    h ^= static_cast<uint32_t>(length);
    return fmix32(h);
}

void KeyEncoder::add_null() {
    put_byte(bytes_, 0xc0);
}

void KeyEncoder::add_bool(bool value) {
    put_byte(bytes_, value ? 0xc3 : 0xc2);
}

void KeyEncoder::add_int(int64_t value) {
    put_int(bytes_, value);
}

void KeyEncoder::add_uint(uint64_t value) {
    put_uint(bytes_, value);
}

HashRule hash_rule_for(const caps::CapabilitySet &capabilities) {
    return capabilities.has(caps::Capability::IntegralDoubleHash) ? HashRule::Picodata26_1
                                                                  : HashRule::Picodata25_5;
}

const char *hash_rule_name(HashRule rule) {
    return rule == HashRule::Picodata26_1 ? "26.1" : "25.5";
}

std::optional<HashRule> parse_hash_rule(std::string_view name) {
    for (HashRule rule : {HashRule::Picodata25_5, HashRule::Picodata26_1})
        if (name == hash_rule_name(rule))
            return rule;
    return std::nullopt;
}

void KeyEncoder::add_double(double value) {
    if (rule_ == HashRule::Picodata26_1 && put_integral_double(bytes_, value))
        return;
    uint64_t bits;
    static_assert(sizeof bits == sizeof value, "double must be 64-bit IEEE 754");
    std::memcpy(&bits, &value, sizeof bits);
    // 25.5: mp_encode_double (with its header); 26.1: mp_store_double (the 8 bytes only).
    if (rule_ == HashRule::Picodata25_5)
        put_byte(bytes_, 0xcb);
    put_be(bytes_, bits, 8);
}

void KeyEncoder::add_text(std::string_view utf8) {
    bytes_.append(utf8.data(), utf8.size());
}

// Plain decimal text: [+|-] digits [. digits], at least one digit. The coefficient is every digit
// written, with leading zeros dropped (so "007.5" and "0.05" have coefficients 75 and 5) and
// trailing zeros kept (so "1.10" keeps 110, scale 2); an all-zero coefficient is the single digit
// 0. The scale is the number of digits after the point. Zero, including "-0", is encoded positive.
void KeyEncoder::add_decimal(std::string_view text) {
    size_t pos = 0;
    bool negative = false;
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        negative = text[pos] == '-';
        ++pos;
    }
    std::string digits;
    size_t scale = 0;
    bool seen_point = false;
    bool seen_digit = false;
    for (; pos < text.size(); ++pos) {
        const char c = text[pos];
        if (is_digit(c)) {
            seen_digit = true;
            if (seen_point)
                ++scale;
            if (!digits.empty() || c != '0')
                digits.push_back(c);
        } else if (c == '.' && !seen_point) {
            seen_point = true;
        } else {
            throw Error(ErrorKind::InvalidInput, "invalid decimal " + quoted(text),
                        "write a plain decimal number such as -12.340 (no exponent, no spaces)");
        }
    }
    if (!seen_digit)
        throw Error(ErrorKind::InvalidInput, "invalid decimal " + quoted(text),
                    "write a plain decimal number such as -12.340 (no exponent, no spaces)");
    if (digits.empty()) {
        digits = "0";
        negative = false;
    }
    if (digits.size() > kMaxDecimalDigits)
        throw Error(ErrorKind::OutOfRange,
                    "decimal " + quoted(text) + " has " + std::to_string(digits.size()) +
                        " significant digits, more than the " + std::to_string(kMaxDecimalDigits) +
                        " Picodata supports");
    if (scale > kMaxDecimalDigits)
        throw Error(ErrorKind::OutOfRange,
                    "decimal " + quoted(text) + " has " + std::to_string(scale) +
                        " digits after the point, more than the " +
                        std::to_string(kMaxDecimalDigits) + " Picodata supports");

    // Packed BCD: digits then the sign nibble, with a leading zero nibble to fill a whole byte.
    std::string nibbles;
    if (digits.size() % 2 == 0)
        nibbles.push_back(0);
    for (char c : digits)
        nibbles.push_back(static_cast<char>(c - '0'));
    nibbles.push_back(negative ? 0x0d : 0x0c);

    std::string payload;
    put_int(payload, static_cast<int64_t>(scale));
    for (size_t i = 0; i < nibbles.size(); i += 2)
        put_byte(payload, static_cast<uint8_t>(nibbles[i] << 4 | nibbles[i + 1]));

    put_ext_header(bytes_, kExtDecimal, payload.size());
    bytes_ += payload;
}

void KeyEncoder::add_uuid(const std::array<uint8_t, 16> &bytes) {
    put_ext_header(bytes_, kExtUuid, bytes.size());
    for (uint8_t b : bytes)
        put_byte(bytes_, b);
}

void KeyEncoder::add_datetime(int64_t epoch_seconds, int32_t nanoseconds, int16_t tz_offset,
                              int16_t tz_index) {
    const bool compact = nanoseconds == 0 && tz_offset == 0 && tz_index == 0;
    put_ext_header(bytes_, kExtDatetime, compact ? 8 : 16);
    put_le(bytes_, static_cast<uint64_t>(epoch_seconds), 8);
    if (compact)
        return;
    put_le(bytes_, static_cast<uint32_t>(nanoseconds), 4);
    put_le(bytes_, static_cast<uint16_t>(tz_offset), 2);
    put_le(bytes_, static_cast<uint16_t>(tz_index), 2);
}

uint32_t bucket_id_for_bytes(std::string_view key_bytes, uint32_t bucket_count) {
    if (bucket_count == 0)
        throw Error(ErrorKind::OutOfRange, "bucket_count must be at least 1",
                    "use the cluster's bucket_count (Picodata's default is 3000)");
    return murmur3_x86_32(key_bytes.data(), key_bytes.size(), kBucketHashSeed) % bucket_count + 1;
}

std::array<uint8_t, 16> parse_uuid(std::string_view text) {
    std::array<uint8_t, 16> out{};
    auto fail = [&]() {
        return Error(ErrorKind::InvalidInput, "invalid uuid " + quoted(text),
                     "expected 8-4-4-4-12 hexadecimal digits, e.g. "
                     "123e4567-e89b-12d3-a456-426614174000");
    };
    if (text.size() != 36)
        throw fail();
    size_t byte = 0;
    for (size_t i = 0; i < text.size();) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-')
                throw fail();
            ++i;
            continue;
        }
        const int hi = hex_value(text[i]);
        const int lo = hex_value(text[i + 1]);
        if (hi < 0 || lo < 0)
            throw fail();
        out[byte++] = static_cast<uint8_t>(hi << 4 | lo);
        i += 2;
    }
    return out;
}

}  // namespace picoroute
