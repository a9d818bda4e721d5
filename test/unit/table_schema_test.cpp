// `_pico_table` rows -> table descriptions: shapes, nesting limit, bad strings.
#include "core/errors.h"
#include "core/table_schema.h"

#include <gtest/gtest.h>

#include <string>

namespace picoroute {
namespace {

const std::string kFormat = R"([{"name":"id","field_type":"integer","is_nullable":false},)"
                            R"({"name":"bucket_id","field_type":"unsigned","is_nullable":true},)"
                            R"({"name":"name","field_type":"string","is_nullable":true}])";

std::string error_of(const std::string &name, const std::string &distribution,
                     const std::string &format) {
    try {
        parse_table_schema(name, distribution, format, 63);
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidCatalog);
        return e.what();
    }
    return "";
}

TEST(TableSchema, ShardedImplicitly) {
    TableSchema t = parse_table_schema(
        "users", R"({"ShardedImplicitly":[["id","name"],"murmur3","hot"]})", kFormat, 63);
    EXPECT_EQ(t.name, "users");
    EXPECT_FALSE(t.global);
    EXPECT_EQ(t.tier, "hot");
    ASSERT_EQ(t.sharding_key.size(), 2u);
    EXPECT_EQ(t.sharding_key[1], "name");
    ASSERT_EQ(t.columns.size(), 2u);  // bucket_id is not imported
    EXPECT_EQ(t.columns[0].name, "id");
    EXPECT_EQ(t.columns[0].type, "integer");
    EXPECT_FALSE(t.columns[0].nullable);
    EXPECT_TRUE(t.columns[1].nullable);
}

TEST(TableSchema, GlobalAndShardedByField) {
    EXPECT_TRUE(parse_table_schema("g", R"({"Global":null})", kFormat, 63).global);
    TableSchema t =
        parse_table_schema("f", R"({"ShardedByField":["name","default"]})", kFormat, 63);
    ASSERT_EQ(t.sharding_key.size(), 1u);
    EXPECT_EQ(t.sharding_key[0], "name");
    EXPECT_EQ(t.tier, "default");
}

TEST(TableSchema, EscapedNamesAreDecoded) {
    TableSchema t = parse_table_schema(
        "t", R"({"Global":null})",
        R"([{"name":"caf\u00e9 \ud83d\ude00 \"q\" \\","field_type":"string"}])", 63);
    EXPECT_EQ(t.columns[0].name, "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" \\");
}

TEST(TableSchema, DeepNestingIsRefusedWithoutRecursion) {
    std::string deep(60000, '[');
    deep += std::string(60000, ']');
    std::string message = error_of("deep", R"({"Global":null})", deep);
    EXPECT_NE(message.find("\"deep\""), std::string::npos) << message;
    EXPECT_NE(message.find("format: json nested deeper than"), std::string::npos) << message;
    // Brackets inside strings do not count.
    TableSchema t = parse_table_schema(
        "s", R"({"Global":null})",
        R"([{"name":")" + std::string(100, '[') + R"(","field_type":"string"}])", 200);
    EXPECT_EQ(t.columns[0].name, std::string(100, '['));
}

TEST(TableSchema, BadStringsGiveClearErrors) {
    const std::string g = R"({"Global":null})";
    std::string m = error_of("t1", g, R"([{"name":"a\u0000b","field_type":"string"}])");
    EXPECT_NE(m.find("\"t1\""), std::string::npos) << m;
    EXPECT_NE(m.find("NUL"), std::string::npos) << m;
    m = error_of("t2", g, R"([{"name":"a\ud800b","field_type":"string"}])");
    EXPECT_NE(m.find("\"t2\": format: invalid json"), std::string::npos) << m;
    m = error_of("t3", g, R"([{"name":"a\ude00","field_type":"string"}])");
    EXPECT_NE(m.find("\"t3\": format: invalid json"), std::string::npos) << m;
    m = error_of("t4", g, R"([{"name":"a\qb","field_type":"string"}])");
    EXPECT_NE(m.find("\"t4\": format: invalid json"), std::string::npos) << m;
    m = error_of("t5", g, "[{\"name\":\"a\xff\xfe\",\"field_type\":\"string\"}]");
    EXPECT_NE(m.find("\"t5\": format: invalid json"), std::string::npos) << m;
    m = error_of("t6", g, R"([{"name":")" + std::string(64, 'x') + R"(","field_type":"string"}])");
    EXPECT_NE(m.find("would be truncated"), std::string::npos) << m;
    m = error_of("t7", R"({"ShardedImplicitly":[["k\u0000"],"murmur3","default"]})", kFormat);
    EXPECT_NE(m.find("sharding key column"), std::string::npos) << m;
    m = error_of("t8", R"({"Sharded":1})", kFormat);
    EXPECT_NE(m.find("unknown distribution"), std::string::npos) << m;
    m = error_of("t9", g, "[");
    EXPECT_NE(m.find("\"t9\": format: invalid json"), std::string::npos) << m;
    m = error_of("bad\xff", g, kFormat);
    EXPECT_NE(m.find("\"bad\\xff\""), std::string::npos) << m;
}

TEST(TableSchema, Utf8Validation) {
    EXPECT_TRUE(valid_utf8("plain \xc3\xa9 \xf0\x9f\x98\x80"));
    EXPECT_FALSE(valid_utf8("\xc0\x80"));          // overlong NUL
    EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // encoded surrogate
    EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_FALSE(valid_utf8("\xe2\x82"));          // cut short
    EXPECT_EQ(printable_name("a\\b\x01"), "a\\x5cb\\x01");
}

}  // namespace
}  // namespace picoroute

TEST(TableSchemaTest, OptsMarkAnUnloggedTable) {
    using picoroute::parse_table_unlogged;
    EXPECT_TRUE(parse_table_unlogged("t", "[{\"unlogged\":[true]}]"));
    EXPECT_TRUE(parse_table_unlogged(
        "t",
        "[{\"pk_contains_bucket_id\":[true]},{\"unlogged\":[true]},{\"synchronous\":[true]}]"));
    EXPECT_TRUE(parse_table_unlogged("t", "[{\"unlogged\":true}]"));
    EXPECT_FALSE(parse_table_unlogged("t", "[{\"unlogged\":[false]}]"));
    EXPECT_FALSE(parse_table_unlogged("t", "[]"));
    EXPECT_FALSE(parse_table_unlogged("t", "null"));
    EXPECT_FALSE(parse_table_unlogged("t", ""));
    EXPECT_FALSE(parse_table_unlogged("t", "[{\"synchronous\":[true]}, 7]"));
    EXPECT_THROW(parse_table_unlogged("t", "{\"unlogged\":[true]}"), picoroute::Error);
    EXPECT_THROW(parse_table_unlogged("t", "[{"), picoroute::Error);
}
