// The hashing rule of each Picodata release line (core/bucket_hash.h HashRule): the buckets
// Picodata's own integration tests expect, every MessagePack width of integers and doubles under
// each rule, and which rule a version hashes by. The same vectors are in the self-test of
// test/tools/bucket_hash_reference.py (PICODATA_VECTORS, INTEGER_EDGES, DOUBLE_EDGES); its values
// were printed by that independent implementation, not by this library.
#include "core/bucket_hash.h"
#include "core/capabilities.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

namespace picoroute {
namespace {

constexpr HashRule kRules[] = {HashRule::Picodata25_5, HashRule::Picodata26_1};

std::string hex(const std::string &bytes) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

// One key part as Picodata's statements give it: an integer, a text, a decimal (by its text, in
// Decimal) or a double.
struct Decimal {
    const char *text;
};
using Part = std::variant<int64_t, std::string, Decimal, double>;

KeyEncoder encode(const std::vector<Part> &key, HashRule rule) {
    KeyEncoder enc(rule);
    for (const Part &part : key) {
        if (const auto *i = std::get_if<int64_t>(&part))
            enc.add_int(*i);
        else if (const auto *s = std::get_if<std::string>(&part))
            enc.add_text(*s);
        else if (const auto *d = std::get_if<Decimal>(&part))
            enc.add_decimal(d->text);
        else
            enc.add_double(std::get<double>(part));
    }
    return enc;
}

uint32_t bucket_of(const std::vector<Part> &key, HashRule rule) {
    return bucket_id_for_bytes(encode(key, rule).bytes(), 3000);
}

std::string part_hex(const Part &part, HashRule rule) {
    return hex(encode({part}, rule).bytes());
}

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr double kTwoPow53 = 9007199254740992.0;
constexpr double kTwoPow63 = 9223372036854775808.0;
constexpr double kTwoPow64 = 18446744073709551616.0;

// --- Picodata's own buckets ---------------------------------------------------------------------
// Buckets of 3000 that Picodata's integration tests expect (test/ of its repository, file:line@tag;
// "every tag": 25.5.10, 26.1.1, 26.1.6, 26.2.1-rc1, 26.2.1-rc2, 26.3.0). EXPLAIN prints
// `buckets = [N]`; insert.sql selects the bucket_id of rows inserted by SQL.

struct PicodataVector {
    std::vector<Part> key;
    uint32_t bucket;
    bool only_25_5;  // holds for 25.5's rule only
    const char *where;
};

const std::vector<PicodataVector> &picodata_vectors() {
    static const std::vector<PicodataVector> vectors = {
        // CREATE TABLE ... (id int primary key, ...)
        {{int64_t{1}}, 1934, false, "int/sql/explain.sql:101@25.5.10, :119@26.3.0"},
        {{int64_t{2}},
         1410,
         false,
         "int/sql/insert.sql:26 every tag; int/test_cli_ux.py:449@25.5.10"},
        {{int64_t{3}}, 1958, false, "int/sql/insert.sql:41 every tag"},
        {{int64_t{4}}, 2752, false, "int/sql/insert.sql:55 every tag"},
        {{int64_t{5}}, 219, false, "int/sql/insert.sql:55 every tag"},
        {{int64_t{8}}, 2564, false, "int/sql/insert.sql:110 every tag"},
        {{int64_t{10}}, 626, false, "int/sql/insert.sql:26 every tag"},
        {{int64_t{0}}, 84, false, "pgproto/simple_query_test.py:130@26.2.1-rc1, @26.3.0"},
        {{int64_t{15}}, 1403, false, "int/sql/explain_options.sql:2321@26.2.1-rc1 (IN (10,15,42))"},
        {{int64_t{42}}, 2426, false, "int/sql/explain_buckets.sql:106@26.2.1-rc1, @26.3.0"},
        {{int64_t{43}}, 214, false, "int/test_bucket_id_pk_index.py:250@26.1.6, @26.3.0"},
        // The integer that decides that integers keep their MessagePack marker at every release:
        // d3 + 8 bytes -> 413; upstream tarantool 2.11.8's marker-less 8 bytes would give 73.
        {{kInt64Min}, 413, false, "int/sql/insert.sql:83 every tag"},
        // CREATE TABLE t (a INT, b DOUBLE, c TEXT, PRIMARY KEY (c, a)): the key is (c, a)
        {{std::string("1"), int64_t{1}},
         898,
         false,
         "int/sql/explain.sql:1207@26.1.1, :1185@26.3.0"},
        {{std::string("3"), int64_t{3}},
         1787,
         false,
         "int/sql/explain.sql:1207@26.1.1, :1185@26.3.0"},
        {{std::string("2"), int64_t{2}}, 2356, false, "int/sql/explain_options.sql:419@26.3.0"},
        {{std::string("2"), int64_t{1}}, 2997, false, "int/sql/explain.sql:1273@26.1.1"},
        {{std::string("4"), int64_t{3}}, 2520, false, "int/sql/explain_buckets.sql:46@26.3.0"},
        {{std::string("lol"), int64_t{5}}, 442, false, "int/sql/explain_options.sql:247@26.3.0"},
        {{std::string("lol"), int64_t{42}}, 739, false, "int/sql/explain_buckets.sql:58@26.3.0"},
        {{std::string("kek"), int64_t{1}}, 2036, false, "int/sql/explain_buckets.sql:70@26.3.0"},
        {{std::string("kek"), int64_t{42}}, 2873, false, "int/sql/explain_options.sql:280@26.3.0"},
        // CREATE TABLE t (a INT, b DECIMAL, PRIMARY KEY (b)): WHERE b = 1::decimal, b = 1.0
        {{Decimal{"1"}}, 2135, false, "int/sql/test_known_defects.sql:28@26.1.1"},
        {{Decimal{"1.0"}}, 712, false, "int/sql/test_known_defects.sql:40@26.1.1"},
        // PRIMARY KEY (b) of type DOUBLE, WHERE b = 1::double, on the development line before the
        // tarantool 2.11.8 bump (commit a2ac9b022; 0acc62c58 rewrote it for decimals "because
        // doubles now hash like integers": under 26.1's rule 1.0 is the integer's 1934)
        {{1.0}, 2099, true, "int/sql/test_known_defects.sql:28@a2ac9b022"},
    };
    return vectors;
}

TEST(BucketHashRulesTest, PicodataOwnVectors) {
    for (const PicodataVector &v : picodata_vectors()) {
        for (HashRule rule : kRules) {
            if (v.only_25_5 && rule != HashRule::Picodata25_5)
                continue;
            EXPECT_EQ(bucket_of(v.key, rule), v.bucket)
                << v.where << " under " << hash_rule_name(rule);
        }
    }
    EXPECT_EQ(bucket_of({1.0}, HashRule::Picodata26_1), 1934u);
}

// --- integers: the same under every rule
// ----------------------------------------------------------

struct IntegerEdge {
    int64_t value;
    const char *bytes;
    uint32_t bucket;
};

TEST(BucketHashRulesTest, IntegerWidthsKeepTheirMarkerUnderEveryRule) {
    const std::vector<IntegerEdge> edges = {
        {127, "7f", 2362},
        {128, "cc80", 1089},
        {255, "ccff", 1968},
        {256, "cd0100", 1052},
        {65535, "cdffff", 1488},
        {65536, "ce00010000", 108},
        {4294967295LL, "ceffffffff", 2889},
        {4294967296LL, "cf0000000100000000", 2356},
        {-32, "e0", 1881},
        {-33, "d0df", 1728},
        {-128, "d080", 1124},
        {-129, "d1ff7f", 344},
        {-32768, "d18000", 105},
        {-32769, "d2ffff7fff", 2910},
        {-2147483648LL, "d280000000", 2160},
        {-2147483649LL, "d3ffffffff7fffffff", 2667},
        {kInt64Min, "d38000000000000000", 413},
        {std::numeric_limits<int64_t>::max(), "cf7fffffffffffffff", 246},
    };
    for (const IntegerEdge &e : edges) {
        for (HashRule rule : kRules) {
            EXPECT_EQ(part_hex(e.value, rule), e.bytes) << e.value << " " << hash_rule_name(rule);
            EXPECT_EQ(bucket_of({e.value}, rule), e.bucket)
                << e.value << " " << hash_rule_name(rule);
        }
    }
    for (HashRule rule : kRules) {
        KeyEncoder max(rule);
        max.add_uint(std::numeric_limits<uint64_t>::max());
        EXPECT_EQ(hex(max.bytes()), "cfffffffffffffffff");
        EXPECT_EQ(bucket_id_for_bytes(max.bytes(), 3000), 1556u);
    }
}

TEST(BucketHashRulesTest, EveryOtherTypeIsTheSameUnderEveryRule) {
    std::string first;
    for (HashRule rule : kRules) {
        KeyEncoder enc(rule);
        enc.add_null();
        enc.add_bool(true);
        enc.add_text("lol");
        enc.add_int(300);
        enc.add_decimal("-12.340");
        enc.add_uuid(parse_uuid("123e4567-e89b-12d3-a456-426614174000"));
        enc.add_datetime(1700000000, 5, -180, 1);
        if (first.empty())
            first = enc.bytes();
        EXPECT_EQ(enc.bytes(), first) << hash_rule_name(rule);
    }
}

// --- doubles ------------------------------------------------------------------------------------

struct DoubleEdge {
    double value;
    const char *bytes_25_5;  // cb + IEEE 754, every value
    uint32_t bucket_25_5;
    const char *bytes_26_1;  // the integer when integral in [-2^63, 2^64), else IEEE 754 alone
    uint32_t bucket_26_1;
};

const std::vector<DoubleEdge> &double_edges() {
    static const double inf = std::numeric_limits<double>::infinity();
    static const std::vector<DoubleEdge> edges = {
        {1.5, "cb3ff8000000000000", 632, "3ff8000000000000", 510},
        {-1.5, "cbbff8000000000000", 618, "bff8000000000000", 1027},
        {1.0, "cb3ff0000000000000", 2099, "01", 1934},
        {0.0, "cb0000000000000000", 1781, "00", 84},
        {-0.0, "cb8000000000000000", 1327, "00", 84},  // -0.0 >= 0: the unsigned 0
        {std::numeric_limits<double>::quiet_NaN(), "cb7ff8000000000000", 1936, "7ff8000000000000",
         2629},
        {inf, "cb7ff0000000000000", 1721, "7ff0000000000000", 418},
        {-inf, "cbfff0000000000000", 1086, "fff0000000000000", 2251},
        {1e300, "cb7e37e43c8800759c", 2568, "7e37e43c8800759c", 2830},  // integral, beyond 2^64
        {kTwoPow53, "cb4340000000000000", 2661, "cf0020000000000000", 2913},
        {kTwoPow63, "cb43e0000000000000", 2100, "cf8000000000000000", 506},  // above INT64_MAX
        {kTwoPow64 - 2048.0, "cb43efffffffffffff", 1201, "cffffffffffffff800", 16},  // below 2^64
        {kTwoPow64, "cb43f0000000000000", 1917, "43f0000000000000", 845},     // first beyond uint64
        {-kTwoPow63, "cbc3e0000000000000", 2358, "d38000000000000000", 413},  // INT64_MIN
        {std::nextafter(-kTwoPow63, -inf), "cbc3e0000000000001", 882, "c3e0000000000001", 1357},
        {127.0, "cb405fc00000000000", 1952, "7f", 2362},
        {128.0, "cb4060000000000000", 1644, "cc80", 1089},
        {255.0, "cb406fe00000000000", 2254, "ccff", 1968},
        {256.0, "cb4070000000000000", 709, "cd0100", 1052},
        {65535.0, "cb40efffe000000000", 2190, "cdffff", 1488},
        {65536.0, "cb40f0000000000000", 2729, "ce00010000", 108},
        {4294967295.0, "cb41efffffffe00000", 647, "ceffffffff", 2889},
        {4294967296.0, "cb41f0000000000000", 1396, "cf0000000100000000", 2356},
        {-32.0, "cbc040000000000000", 1934, "e0", 1881},
        {-33.0, "cbc040800000000000", 748, "d0df", 1728},
        {-128.0, "cbc060000000000000", 2915, "d080", 1124},
        {-129.0, "cbc060200000000000", 387, "d1ff7f", 344},
        {-32768.0, "cbc0e0000000000000", 973, "d18000", 105},
        {-32769.0, "cbc0e0002000000000", 1151, "d2ffff7fff", 2910},
        {-2147483648.0, "cbc1e0000000000000", 1092, "d280000000", 2160},
        {-2147483649.0, "cbc1e0000000200000", 2418, "d3ffffffff7fffffff", 2667},
    };
    return edges;
}

TEST(BucketHashRulesTest, DoublesUnder25_5AreMessagePackDoubles) {
    for (const DoubleEdge &e : double_edges()) {
        EXPECT_EQ(part_hex(e.value, HashRule::Picodata25_5), e.bytes_25_5) << e.value;
        EXPECT_EQ(bucket_of({e.value}, HashRule::Picodata25_5), e.bucket_25_5) << e.value;
    }
}

TEST(BucketHashRulesTest, DoublesUnder26_1AreIntegersOrHeaderlessIeee754) {
    for (const DoubleEdge &e : double_edges()) {
        EXPECT_EQ(part_hex(e.value, HashRule::Picodata26_1), e.bytes_26_1) << e.value;
        EXPECT_EQ(bucket_of({e.value}, HashRule::Picodata26_1), e.bucket_26_1) << e.value;
    }
}

TEST(BucketHashRulesTest, IntegralDoubleUnder26_1HashesLikeTheIntegerItEquals) {
    for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{-3}, int64_t{300}, int64_t{-129},
                      int64_t{1} << 40, -(int64_t{1} << 53), kInt64Min}) {
        EXPECT_EQ(part_hex(static_cast<double>(v), HashRule::Picodata26_1),
                  part_hex(v, HashRule::Picodata26_1))
            << v;
        EXPECT_NE(part_hex(static_cast<double>(v), HashRule::Picodata25_5),
                  part_hex(v, HashRule::Picodata25_5))
            << v;
    }
    KeyEncoder big(HashRule::Picodata26_1);
    big.add_uint(uint64_t{1} << 63);
    EXPECT_EQ(part_hex(kTwoPow63, HashRule::Picodata26_1), hex(big.bytes()));
}

TEST(BucketHashRulesTest, CompositeKeysAndClearKeepTheRule) {
    KeyEncoder enc(HashRule::Picodata26_1);
    enc.add_text("lol");
    enc.add_double(5.0);
    EXPECT_EQ(bucket_id_for_bytes(enc.bytes(), 3000), 442u);  // like ('lol', 5)
    enc.clear();
    EXPECT_EQ(enc.rule(), HashRule::Picodata26_1);
    enc.add_double(2.5);
    enc.add_double(-0.0);
    enc.add_double(0.1);
    EXPECT_EQ(hex(enc.bytes()),
              "400400000000000000"
              "3fb999999999999a");

    KeyEncoder old(HashRule::Picodata25_5);
    old.add_double(2.5);
    old.add_double(-0.0);
    EXPECT_EQ(hex(old.bytes()), "cb4004000000000000cb8000000000000000");
    EXPECT_EQ(old.rule(), HashRule::Picodata25_5);
}

// --- which rule a version hashes by --------------------------------------------------------------

TEST(BucketHashRulesTest, RuleOfEachRelease) {
    auto rule_of = [](const char *version) { return hash_rule_for(caps::CapabilitySet(version)); };
    // A development build is taken for the newest release before it (core/capabilities.h): a
    // build of the 26.1.0 tag, which already hashes by 26.1's rule, is taken for 25.5.10 (a hop).
    for (const char *v : {"25.5.1", "25.5.10", "25.6.0", "26.1.0", "picodata 25.5.10"})
        EXPECT_EQ(rule_of(v), HashRule::Picodata25_5) << v;
    for (const char *v : {"26.1.1", "26.1.6", "26.2.1-rc1", "26.2.1rc1", "26.2.1-rc2", "26.3.0",
                          "26.3.0-142-g812716f7e", "picodata 26.1.1"})
        EXPECT_EQ(rule_of(v), HashRule::Picodata26_1) << v;
    EXPECT_EQ(rule_of("not a version"), HashRule::Picodata25_5);
    EXPECT_EQ(kNewestHashRule, HashRule::Picodata26_1);
}

TEST(BucketHashRulesTest, RuleNames) {
    for (HashRule rule : kRules)
        EXPECT_EQ(parse_hash_rule(hash_rule_name(rule)), rule);
    EXPECT_STREQ(hash_rule_name(HashRule::Picodata25_5), "25.5");
    EXPECT_STREQ(hash_rule_name(HashRule::Picodata26_1), "26.1");
    for (const char *bad : {"", "26", "26.2", "25.5.10", "ieee754", "integral-as-integer"})
        EXPECT_FALSE(parse_hash_rule(bad).has_value()) << bad;
}

}  // namespace
}  // namespace picoroute
