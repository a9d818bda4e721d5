// Bucket hashing: murmur3 vectors, every key encoding byte for byte, and values computed by the
// independent Python reference (test/tools/bucket_hash_reference.py).
#include "core/bucket_hash.h"
#include "core/errors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace picoroute {
namespace {

// The rule for the encodings that do not depend on it (all but doubles, whose rules are in
// bucket_hash_rules_test.cpp, which also checks that the rest is the same under each rule); the
// doubles of the cross-check below are 25.5's.
constexpr HashRule kRule = HashRule::Picodata25_5;

std::string hex(const std::string &bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

std::string int_bytes(int64_t v) {
    KeyEncoder enc(kRule);
    enc.add_int(v);
    return hex(enc.bytes());
}

std::string uint_bytes(uint64_t v) {
    KeyEncoder enc(kRule);
    enc.add_uint(v);
    return hex(enc.bytes());
}

std::string decimal_bytes(const std::string &text) {
    KeyEncoder enc(kRule);
    enc.add_decimal(text);
    return hex(enc.bytes());
}

uint32_t bucket(const KeyEncoder &enc, uint32_t count = 3000) {
    return bucket_id_for_bytes(enc.bytes(), count);
}

uint32_t murmur(const std::string &s, uint32_t seed) {
    return murmur3_x86_32(s.data(), s.size(), seed);
}

ErrorKind error_kind_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const Error &e) {
        return e.kind();
    }
    ADD_FAILURE() << "no picoroute::Error thrown";
    return ErrorKind::InvalidCatalog;
}

// --- murmur3_x86_32 ---------------------------------------------------------------------------

TEST(BucketHashMurmur3Test, PublishedVectors) {
    EXPECT_EQ(murmur("", 0), 0u);
    EXPECT_EQ(murmur("", 1), 0x514E28B7u);
    EXPECT_EQ(murmur("", 0xFFFFFFFFu), 0x81F16F39u);
    EXPECT_EQ(murmur(std::string("\0\0\0\0", 4), 0), 0x2362F9DEu);
    EXPECT_EQ(murmur("\xff\xff\xff\xff", 0), 0x76293B50u);
    EXPECT_EQ(murmur("\x21\x43\x65\x87", 0), 0xF55B516Bu);
    EXPECT_EQ(murmur("\x21\x43\x65\x87", 0x5082EDEE), 0x2362F9DEu);
    EXPECT_EQ(murmur("\x21\x43\x65", 0), 0x7E4A8634u);
    EXPECT_EQ(murmur("\x21\x43", 0), 0xA0F7B07Au);
    EXPECT_EQ(murmur("\x21", 0), 0x72661CF4u);
    EXPECT_EQ(murmur("hello", 0), 0x248BFA47u);
    EXPECT_EQ(murmur("The quick brown fox jumps over the lazy dog", 0), 0x2E4FF723u);
}

TEST(BucketHashMurmur3Test, UnalignedInputGivesSameHash) {
    const std::string text = "The quick brown fox jumps over the lazy dog";
    std::vector<char> buffer(text.size() + 8);
    for (size_t offset = 0; offset < 4; ++offset) {
        std::memcpy(buffer.data() + offset, text.data(), text.size());
        EXPECT_EQ(murmur3_x86_32(buffer.data() + offset, text.size(), 0), 0x2E4FF723u)
            << "offset " << offset;
    }
}

// --- verified against Picodata (facts, section 3) ---------------------------------------------

TEST(BucketHashPicodataTest, VerifiedPicodataExamples) {
    KeyEncoder one(kRule);
    one.add_int(1);
    EXPECT_EQ(hex(one.bytes()), "01");
    EXPECT_EQ(bucket(one), 1934u);

    KeyEncoder composite(kRule);
    composite.add_text("lol");
    composite.add_int(5);
    EXPECT_EQ(hex(composite.bytes()), "6c6f6c05");
    EXPECT_EQ(bucket(composite), 442u);

    KeyEncoder dec(kRule);
    dec.add_decimal("1");
    EXPECT_EQ(hex(dec.bytes()), "d501001c");
    EXPECT_EQ(bucket(dec), 2135u);
}

// --- integers -------------------------------------------------------------------------------

TEST(BucketHashKeyEncoderTest, PositiveIntegerBoundaries) {
    EXPECT_EQ(int_bytes(0), "00");
    EXPECT_EQ(int_bytes(127), "7f");
    EXPECT_EQ(int_bytes(128), "cc80");
    EXPECT_EQ(int_bytes(255), "ccff");
    EXPECT_EQ(int_bytes(256), "cd0100");
    EXPECT_EQ(int_bytes(65535), "cdffff");
    EXPECT_EQ(int_bytes(65536), "ce00010000");
    EXPECT_EQ(int_bytes(4294967295LL), "ceffffffff");
    EXPECT_EQ(int_bytes(4294967296LL), "cf0000000100000000");
    EXPECT_EQ(int_bytes(std::numeric_limits<int64_t>::max()), "cf7fffffffffffffff");
}

TEST(BucketHashKeyEncoderTest, UnsignedIntegers) {
    EXPECT_EQ(uint_bytes(0), "00");
    EXPECT_EQ(uint_bytes(127), "7f");
    EXPECT_EQ(uint_bytes(128), "cc80");
    EXPECT_EQ(uint_bytes(65536), "ce00010000");
    EXPECT_EQ(uint_bytes(9223372036854775808ULL), "cf8000000000000000");
    EXPECT_EQ(uint_bytes(std::numeric_limits<uint64_t>::max()), "cfffffffffffffffff");
    for (int64_t v : {0LL, 1LL, 127LL, 300LL, 70000LL, 5000000000LL}) {
        EXPECT_EQ(uint_bytes(static_cast<uint64_t>(v)), int_bytes(v)) << v;
    }
}

TEST(BucketHashKeyEncoderTest, NegativeIntegerBoundaries) {
    EXPECT_EQ(int_bytes(-1), "ff");
    EXPECT_EQ(int_bytes(-32), "e0");
    EXPECT_EQ(int_bytes(-33), "d0df");
    EXPECT_EQ(int_bytes(-128), "d080");
    EXPECT_EQ(int_bytes(-129), "d1ff7f");
    EXPECT_EQ(int_bytes(-32768), "d18000");
    EXPECT_EQ(int_bytes(-32769), "d2ffff7fff");
    EXPECT_EQ(int_bytes(-2147483648LL), "d280000000");
    EXPECT_EQ(int_bytes(-2147483649LL), "d3ffffffff7fffffff");
    EXPECT_EQ(int_bytes(std::numeric_limits<int64_t>::min()), "d38000000000000000");
}

// --- composite keys -------------------------------------------------------------------------

TEST(BucketHashKeyEncoderTest, CompositeKeyIsOrderedConcatenation) {
    KeyEncoder ab(kRule), ba(kRule), a(kRule), b(kRule);
    ab.add_text("alpha");
    ab.add_int(300);
    ba.add_int(300);
    ba.add_text("alpha");
    a.add_text("alpha");
    b.add_int(300);
    EXPECT_EQ(ab.bytes(), a.bytes() + b.bytes());
    EXPECT_EQ(ba.bytes(), b.bytes() + a.bytes());
    EXPECT_NE(ab.bytes(), ba.bytes());
    EXPECT_NE(bucket(ab), bucket(ba));
    EXPECT_EQ(bucket(ab), bucket_id_for_bytes(a.bytes() + b.bytes(), 3000));

    ab.clear();
    EXPECT_TRUE(ab.bytes().empty());
}

// --- scalars --------------------------------------------------------------------------------

TEST(BucketHashKeyEncoderTest, BoolNullText) {
    KeyEncoder enc(kRule);
    enc.add_bool(false);
    enc.add_bool(true);
    enc.add_null();
    enc.add_text("");
    enc.add_text("h\xc3\xa9");
    EXPECT_EQ(hex(enc.bytes()), "c2c3c068c3a9");
}

TEST(BucketHashKeyEncoderTest, Uuid) {
    const auto bytes = parse_uuid("00112233-4455-6677-8899-AaBbCcDdEeFf");
    KeyEncoder enc(kRule);
    enc.add_uuid(bytes);
    EXPECT_EQ(hex(enc.bytes()), "d80200112233445566778899aabbccddeeff");
}

TEST(BucketHashKeyEncoderTest, DatetimeCompactAndFullForms) {
    KeyEncoder compact(kRule);
    compact.add_datetime(1700000000);
    EXPECT_EQ(hex(compact.bytes()), "d70400f1536500000000");

    KeyEncoder negative(kRule);
    negative.add_datetime(-1);
    EXPECT_EQ(hex(negative.bytes()), "d704ffffffffffffffff");

    KeyEncoder nsec(kRule);
    nsec.add_datetime(1700000000, 123456789);
    EXPECT_EQ(hex(nsec.bytes()), "d80400f153650000000015cd5b0700000000");

    KeyEncoder tz(kRule);
    tz.add_datetime(1, 0, -180, 0);
    EXPECT_EQ(hex(tz.bytes()), "d8040100000000000000000000004cff0000");
    // Recheck the tz field explicitly: int16 -180 little-endian is 4c ff.
    EXPECT_EQ(hex(tz.bytes()).substr(28, 4), "4cff");

    KeyEncoder index(kRule);
    index.add_datetime(0, 0, 0, 2);
    EXPECT_EQ(hex(index.bytes()), "d80400000000000000000000000000000200");
}

// --- decimals -------------------------------------------------------------------------------

TEST(BucketHashDecimalTest, ScaleIsPreserved) {
    EXPECT_EQ(decimal_bytes("1"), "d501001c");
    EXPECT_EQ(decimal_bytes("1.0"), "c7030101010c");
    EXPECT_EQ(decimal_bytes("1.00"), "c7030102100c");
    EXPECT_NE(decimal_bytes("1"), decimal_bytes("1.0"));
    EXPECT_NE(decimal_bytes("1.0"), decimal_bytes("1.00"));
}

TEST(BucketHashDecimalTest, SignsAndDigitCounts) {
    EXPECT_EQ(decimal_bytes("-1"), "d501001d");
    EXPECT_EQ(decimal_bytes("+1"), "d501001c");
    EXPECT_EQ(decimal_bytes("12"), "c7030100012c");  // even count: leading zero nibble
    EXPECT_EQ(decimal_bytes("-12"), "c7030100012d");
    EXPECT_EQ(decimal_bytes("123"), "c7030100123c");  // odd count: no padding
    EXPECT_EQ(decimal_bytes("-12.340"), "d6010312340d");
    EXPECT_EQ(decimal_bytes("-0.5"), "d501015d");
}

TEST(BucketHashDecimalTest, LeadingZerosDroppedTrailingKept) {
    EXPECT_EQ(decimal_bytes("007.5"), "c7030101075c");
    EXPECT_EQ(decimal_bytes("007.5"), decimal_bytes("7.5"));
    EXPECT_EQ(decimal_bytes("0.05"), "d501025c");  // coefficient 5, scale 2
    EXPECT_EQ(decimal_bytes(".5"), decimal_bytes("0.5"));
    EXPECT_EQ(decimal_bytes("1."), decimal_bytes("1"));
    EXPECT_EQ(decimal_bytes("1.10"), "c7030102110c");
}

TEST(BucketHashDecimalTest, ZeroIsAlwaysPositive) {
    EXPECT_EQ(decimal_bytes("0"), "d501000c");
    EXPECT_EQ(decimal_bytes("000"), "d501000c");
    EXPECT_EQ(decimal_bytes("-0"), "d501000c");
    EXPECT_EQ(decimal_bytes("+0"), "d501000c");
    EXPECT_EQ(decimal_bytes("0.00"), "d501020c");
    EXPECT_EQ(decimal_bytes("-0.00"), "d501020c");
}

TEST(BucketHashDecimalTest, ExtHeaderFollowsPayloadLength) {
    // Payload = scale byte + (digits / 2 + 1) BCD bytes.
    EXPECT_EQ(decimal_bytes("1").substr(0, 4), "d501");                     // 2 bytes
    EXPECT_EQ(decimal_bytes("12").substr(0, 6), "c70301");                  // 3 bytes
    EXPECT_EQ(decimal_bytes("1234").substr(0, 4), "d601");                  // 4 bytes
    EXPECT_EQ(decimal_bytes("12345").substr(0, 4), "d601");                 // 4 bytes
    EXPECT_EQ(decimal_bytes("123456").substr(0, 6), "c70501");              // 5 bytes
    EXPECT_EQ(decimal_bytes("123456789012").substr(0, 4), "d701");          // 8 bytes
    EXPECT_EQ(decimal_bytes("12345678901234").substr(0, 6), "c70901");      // 9 bytes
    EXPECT_EQ(decimal_bytes(std::string(28, '9')).substr(0, 4), "d801");    // 16 bytes
    EXPECT_EQ(decimal_bytes(std::string(30, '9')).substr(0, 6), "c71101");  // 17 bytes
    EXPECT_EQ(decimal_bytes(std::string(38, '9')).substr(0, 6), "c71501");  // 21 bytes, maximum

    EXPECT_EQ(decimal_bytes("12345678.9012"), "d701040123456789012c");
}

TEST(BucketHashDecimalTest, MaximumPrecisionAndScale) {
    const std::string max_digits(38, '9');
    EXPECT_NO_THROW(decimal_bytes(max_digits));
    EXPECT_NO_THROW(decimal_bytes("0." + max_digits));
    EXPECT_NO_THROW(decimal_bytes("0000" + max_digits));  // leading zeros are not significant
    EXPECT_EQ(decimal_bytes("0." + std::string(37, '0') + "1"), "d501261c");

    EXPECT_EQ(error_kind_of([&] { decimal_bytes(max_digits + "9"); }), ErrorKind::OutOfRange);
    EXPECT_EQ(error_kind_of([&] { decimal_bytes("1" + std::string(38, '0')); }),
              ErrorKind::OutOfRange);
    EXPECT_EQ(error_kind_of([&] { decimal_bytes("0." + std::string(38, '0') + "1"); }),
              ErrorKind::OutOfRange);
}

TEST(BucketHashDecimalTest, RejectsNonPlainText) {
    for (const char *bad :
         {"",    "-",   "+",        ".",    "-.",    "1e3", "1E3", "1.5e-2", " 1",  "1 ", "1. 5",
          "NaN", "nan", "Infinity", "-inf", "1.2.3", "--1", "+-1", "0x10",   "1,5", "١"}) {
        EXPECT_EQ(error_kind_of([&] { decimal_bytes(bad); }), ErrorKind::InvalidInput)
            << "\"" << bad << "\"";
    }
    const std::string with_nul("1\0", 2);
    EXPECT_EQ(error_kind_of([&] { decimal_bytes(with_nul); }), ErrorKind::InvalidInput);
}

TEST(BucketHashDecimalTest, FailedAddLeavesKeyUntouched) {
    KeyEncoder enc(kRule);
    enc.add_int(1);
    EXPECT_THROW(enc.add_decimal("1e3"), Error);
    EXPECT_THROW(enc.add_decimal(std::string(39, '1')), Error);
    EXPECT_EQ(hex(enc.bytes()), "01");
}

// --- uuid parsing -----------------------------------------------------------------------------

TEST(BucketHashParseUuidTest, AcceptsCanonicalForm) {
    const auto b = parse_uuid("123e4567-e89b-12d3-a456-426614174000");
    const std::array<uint8_t, 16> want = {0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
                                          0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00};
    EXPECT_EQ(b, want);
    EXPECT_EQ(parse_uuid("123E4567-E89B-12D3-A456-426614174000"), want);
}

TEST(BucketHashParseUuidTest, RejectsOtherForms) {
    for (const char *bad :
         {"", "123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}",
          "123e4567-e89b-12d3-a456-42661417400", "123e4567-e89b-12d3-a456-4266141740000",
          "123e4567-e89b-12d3-a456_426614174000", "123e456-7e89b-12d3-a456-426614174000",
          "123e4567-e89b-12d3-a456-42661417400g", " 23e4567-e89b-12d3-a456-426614174000",
          "urn:uuid:123e4567-e89b-12d3-a456-426614174000"}) {
        EXPECT_EQ(error_kind_of([&] { parse_uuid(bad); }), ErrorKind::InvalidInput)
            << "\"" << bad << "\"";
    }
}

// --- bucket ids -------------------------------------------------------------------------------

TEST(BucketHashIdTest, ZeroBucketCountIsOutOfRange) {
    EXPECT_EQ(error_kind_of([] { bucket_id_for_bytes("x", 0); }), ErrorKind::OutOfRange);
}

TEST(BucketHashIdTest, AlwaysWithinOneToCount) {
    for (uint32_t count : {1u, 2u, 3u, 7u, 16u, 3000u, 30000u, 65536u, 4294967295u}) {
        uint32_t lowest = count, highest = 0;
        for (int64_t v = -500; v <= 2500; ++v) {
            KeyEncoder enc(kRule);
            enc.add_int(v * 7919);
            const uint32_t id = bucket(enc, count);
            ASSERT_GE(id, 1u) << "count " << count << " value " << v;
            ASSERT_LE(id, count) << "count " << count << " value " << v;
            lowest = std::min(lowest, id);
            highest = std::max(highest, id);
        }
        if (count <= 16) {
            EXPECT_EQ(lowest, 1u) << count;
            EXPECT_EQ(highest, count) << count;
        }
    }
    EXPECT_EQ(bucket_id_for_bytes("", 1), 1u);
}

// --- cross-check against the Python reference ------------------------------------------------
// Every expected value below was printed by test/tools/bucket_hash_reference.py (an independent
// implementation), not by this library; its doubles under 25.5's rule.

struct ReferenceCase {
    const char *name;
    std::function<void(KeyEncoder &)> build;
    uint32_t count;
    const char *key_hex;
    uint32_t bucket_id;
};

TEST(BucketHashReferenceCrossCheckTest, MatchesPythonReference) {
    const std::vector<ReferenceCase> cases = {
        {"int 0", [](KeyEncoder &e) { e.add_int(0); }, 3000, "00", 84},
        {"int -1", [](KeyEncoder &e) { e.add_int(-1); }, 3000, "ff", 2286},
        {"int 300", [](KeyEncoder &e) { e.add_int(300); }, 3000, "cd012c", 588},
        {"int -129", [](KeyEncoder &e) { e.add_int(-129); }, 3000, "d1ff7f", 344},
        {"int64 max", [](KeyEncoder &e) { e.add_int(std::numeric_limits<int64_t>::max()); }, 3000,
         "cf7fffffffffffffff", 246},
        {"uint64 max", [](KeyEncoder &e) { e.add_uint(std::numeric_limits<uint64_t>::max()); },
         3000, "cfffffffffffffffff", 1556},
        {"int64 min", [](KeyEncoder &e) { e.add_int(std::numeric_limits<int64_t>::min()); }, 3000,
         "d38000000000000000", 413},
        {"text hello", [](KeyEncoder &e) { e.add_text("hello"); }, 3000, "68656c6c6f", 1481},
        {"empty text", [](KeyEncoder &e) { e.add_text(""); }, 3000, "", 563},
        {"cyrillic text",
         [](KeyEncoder &e) { e.add_text("\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82"); },
         3000, "d0bfd180d0b8d0b2d0b5d182", 2601},
        {"true", [](KeyEncoder &e) { e.add_bool(true); }, 3000, "c3", 2131},
        {"false", [](KeyEncoder &e) { e.add_bool(false); }, 3000, "c2", 757},
        {"null", [](KeyEncoder &e) { e.add_null(); }, 3000, "c0", 1638},
        {"double 2.5", [](KeyEncoder &e) { e.add_double(2.5); }, 3000, "cb4004000000000000", 286},
        {"double 2.0", [](KeyEncoder &e) { e.add_double(2.0); }, 3000, "cb4000000000000000", 482},
        {"int 2", [](KeyEncoder &e) { e.add_int(2); }, 3000, "02", 1410},
        {"double -0.0", [](KeyEncoder &e) { e.add_double(-0.0); }, 3000, "cb8000000000000000",
         1327},
        {"decimal 1.0", [](KeyEncoder &e) { e.add_decimal("1.0"); }, 3000, "c7030101010c", 712},
        {"decimal -12.340", [](KeyEncoder &e) { e.add_decimal("-12.340"); }, 3000, "d6010312340d",
         1891},
        {"decimal 0", [](KeyEncoder &e) { e.add_decimal("0"); }, 3000, "d501000c", 2785},
        {"decimal -0", [](KeyEncoder &e) { e.add_decimal("-0"); }, 3000, "d501000c", 2785},
        {"decimal 38 digits",
         [](KeyEncoder &e) { e.add_decimal("123456789012345678901234567890.12345678"); }, 3000,
         "c7150108012345678901234567890123456789012345678c", 450},
        {"uuid",
         [](KeyEncoder &e) { e.add_uuid(parse_uuid("123e4567-e89b-12d3-a456-426614174000")); },
         3000, "d802123e4567e89b12d3a456426614174000", 2731},
        {"mixed key",
         [](KeyEncoder &e) {
             e.add_int(1);
             e.add_text("a");
             e.add_null();
             e.add_bool(true);
             e.add_decimal("3.14");
             e.add_double(2.5);
         },
         3000, "0161c0c3c7030102314ccb4004000000000000", 912},
        {"(1, 2) of 16",
         [](KeyEncoder &e) {
             e.add_int(1);
             e.add_int(2);
         },
         16, "0102", 2},
        {"42 of 1", [](KeyEncoder &e) { e.add_int(42); }, 1, "2a", 1},
        {"('lol', 5) of 30000",
         [](KeyEncoder &e) {
             e.add_text("lol");
             e.add_int(5);
         },
         30000, "6c6f6c05", 24442},
    };
    for (const auto &c : cases) {
        KeyEncoder enc(kRule);
        c.build(enc);
        EXPECT_EQ(hex(enc.bytes()), c.key_hex) << c.name;
        EXPECT_EQ(bucket(enc, c.count), c.bucket_id) << c.name;
    }
}

}  // namespace
}  // namespace picoroute
