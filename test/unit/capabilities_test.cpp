// Picodata versions as Picodata writes them, and the capability table at every boundary. The
// table must equal src/core/capabilities.json, which the emulator reads.
#include "core/capabilities.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace picoroute::caps {
namespace {

Version v(const char *text) {
    std::optional<Version> parsed = parse_version(text);
    EXPECT_TRUE(parsed.has_value()) << text;
    return parsed.value_or(Version{});
}

TEST(CapabilitiesTest, ParsesReleasesCandidatesAndBuilds) {
    Version release = v("25.5.1");
    EXPECT_EQ(release.major, 25u);
    EXPECT_EQ(release.minor, 5u);
    EXPECT_EQ(release.patch, 1u);
    EXPECT_EQ(release.rc, 0u);
    EXPECT_EQ(release.commits, 0u);
    EXPECT_EQ(v("26.2.1-rc2").rc, 2u);
    EXPECT_EQ(v("26.2.1rc1").rc, 1u);  // the tag was also written without the dash
    Version build = v("26.1.1-12-gabcdef");
    EXPECT_EQ(build.patch, 1u);
    EXPECT_EQ(build.commits, 12u);
    Version rc_build = v("26.2.1-rc2-3-g0123abc-dirty");
    EXPECT_EQ(rc_build.rc, 2u);
    EXPECT_EQ(rc_build.commits, 3u);
    EXPECT_EQ(v("picodata 26.1.1"), v("26.1.1"));  // what version() returns
    EXPECT_EQ(v("26.2"), v("26.2.0"));             // a series stands for its .0
    EXPECT_EQ(v("26.3.0-115"), v("26.3.0-115-gdef426247"));
    EXPECT_EQ(to_string(v("26.2.1-rc2-3-gabc")), "26.2.1-rc2-3");
}

TEST(CapabilitiesTest, RefusesWhatIsNotAVersion) {
    for (const char *text : {"", "26", "head", "26.x.1", "26.1.1-beta", "26.1.1-rc", "26.1.1-12-g",
                             "26.1.1 ", "v26.1.1", "99999999999.1.1"})
        EXPECT_FALSE(parse_version(text).has_value()) << text;
}

TEST(CapabilitiesTest, LowestVersionIsTheTextOfTheLowest) {
    EXPECT_EQ(lowest_version({"26.1.6", "25.5.10", "26.3.0-142-gabc"}),
              std::optional<std::string>("25.5.10"));
    EXPECT_EQ(lowest_version({"26.3.0-142-gabc", "26.1.6"}), std::optional<std::string>("26.1.6"));
    EXPECT_EQ(lowest_version({"26.2.1", "26.2.1-rc2", "26.2.1-4-gabc"}),
              std::optional<std::string>("26.2.1-rc2"));
    EXPECT_EQ(lowest_version({"picodata 25.5.1", "25.5.10"}),
              std::optional<std::string>("picodata 25.5.1"));
    // What does not parse (an instance reporting nothing usable) is skipped.
    EXPECT_EQ(lowest_version({"", "garbage", "26.1.6"}), std::optional<std::string>("26.1.6"));
    EXPECT_EQ(lowest_version({"", "x"}), std::nullopt);
    EXPECT_EQ(lowest_version({}), std::nullopt);
    // The lowest decides the capabilities: 25.5 keeps the IEEE 754 rule for doubles.
    EXPECT_FALSE(has(*lowest_version({"26.1.6", "25.5.10"}), Capability::IntegralDoubleHash));
    EXPECT_TRUE(
        has(*lowest_version({"26.1.6", "26.3.0-142-gabc"}), Capability::IntegralDoubleHash));
}

TEST(CapabilitiesTest, OrdersAsReleased) {
    std::vector<const char *> ascending = {
        "25.5.10",    "26.1.0",     "26.1.1",           "26.1.1-12-gab", "26.1.6",       "26.2.0",
        "26.2.1-rc1", "26.2.1-rc2", "26.2.1-rc2-5-gab", "26.2.1",        "26.2.1-1-gab", "26.3.0"};
    for (size_t i = 0; i + 1 < ascending.size(); i++)
        EXPECT_TRUE(v(ascending[i]) < v(ascending[i + 1]))
            << ascending[i] << " < " << ascending[i + 1];
}

// Every row at the versions around its thresholds.
TEST(CapabilitiesTest, PruneByBucketIdFrom26_2_1_rc2AndMasterAfter26_3_0_115) {
    auto prune = [](const char *version) { return has(version, Capability::PruneByBucketId); };
    EXPECT_FALSE(prune("25.5.10"));
    EXPECT_FALSE(prune("26.1.6"));
    EXPECT_FALSE(prune("26.2.0"));
    EXPECT_FALSE(prune("26.2.1-rc1"));
    EXPECT_FALSE(prune("26.2.1rc1"));
    EXPECT_TRUE(prune("26.2.1-rc2"));
    EXPECT_TRUE(prune("26.2.1"));
    EXPECT_TRUE(prune("26.2.5"));
    EXPECT_FALSE(prune("26.3.0"));  // the tag that starts the 26.3 series predates it
    EXPECT_FALSE(prune("26.3.0-114-gabc"));
    EXPECT_TRUE(prune("26.3.0-115-gdef426247"));
    EXPECT_TRUE(prune("26.3.1"));
    EXPECT_TRUE(prune("27.1.1"));
}

TEST(CapabilitiesTest, ForwardFrom26_2_1_rc1) {
    EXPECT_FALSE(has("26.1.6", Capability::Forward));
    EXPECT_FALSE(has("26.2.0", Capability::Forward));
    EXPECT_FALSE(has("26.2.0-300-gabc", Capability::Forward));
    EXPECT_TRUE(has("26.2.1-rc1", Capability::Forward));
    EXPECT_TRUE(has("26.2.1", Capability::Forward));
    EXPECT_TRUE(has("26.3.0", Capability::Forward));
}

TEST(CapabilitiesTest, StatementInvalidationReadPreferenceAndDoubleHashFrom26_1) {
    for (Capability c : {Capability::StmtInvalidation, Capability::ReadPreference,
                         Capability::IntegralDoubleHash}) {
        EXPECT_FALSE(has("25.5.10", c)) << capability_name(c);
        EXPECT_FALSE(has("25.6.0-40-gabc", c)) << capability_name(c);
        EXPECT_TRUE(has("26.1.0", c)) << capability_name(c);
        EXPECT_TRUE(has("26.1.1", c)) << capability_name(c);
        EXPECT_TRUE(has("26.2.0", c)) << capability_name(c);
        EXPECT_TRUE(has("26.3.0-142-g812716f7e", c)) << capability_name(c);
    }
}

TEST(CapabilitiesTest, LocalExecutionFrom26_1_1) {
    EXPECT_FALSE(has("25.5.10", Capability::LocalExecution));
    EXPECT_FALSE(has("26.1.0", Capability::LocalExecution));
    EXPECT_TRUE(has("26.1.1", Capability::LocalExecution));
    EXPECT_TRUE(has("26.2.0", Capability::LocalExecution));
}

TEST(CapabilitiesTest, DnfChainLimitFrom26_1_6And26_2_1_rc1) {
    EXPECT_EQ(kDnfChainLimit, 512u);
    EXPECT_FALSE(has("25.5.10", Capability::DnfChainLimit));
    EXPECT_FALSE(has("26.1.5", Capability::DnfChainLimit));
    EXPECT_TRUE(has("26.1.6", Capability::DnfChainLimit));
    EXPECT_FALSE(has("26.2.0", Capability::DnfChainLimit));  // 26.2.0 came before 26.1.6's fix
    EXPECT_TRUE(has("26.2.1-rc1", Capability::DnfChainLimit));
    EXPECT_TRUE(has("26.3.0", Capability::DnfChainLimit));
}

TEST(CapabilitiesTest, SwitchoverRefusalFrom26_1_2And26_2_1_rc1) {
    EXPECT_FALSE(has("25.5.10", Capability::SwitchoverRefusal));
    EXPECT_FALSE(has("26.1.1", Capability::SwitchoverRefusal));
    EXPECT_TRUE(has("26.1.2", Capability::SwitchoverRefusal));
    EXPECT_FALSE(has("26.2.0", Capability::SwitchoverRefusal));
    EXPECT_TRUE(has("26.2.1-rc1", Capability::SwitchoverRefusal));
    EXPECT_TRUE(has("26.3.0", Capability::SwitchoverRefusal));
}

TEST(CapabilitiesTest, UnloggedTablesFrom26_1) {
    EXPECT_FALSE(has("25.5.10", Capability::UnloggedTables));
    EXPECT_FALSE(has("25.6.0-40-gabc", Capability::UnloggedTables));
    EXPECT_TRUE(has("26.1.0", Capability::UnloggedTables));
    EXPECT_TRUE(has("26.1.6", Capability::UnloggedTables));
    EXPECT_TRUE(has("26.3.0", Capability::UnloggedTables));
}

TEST(CapabilitiesTest, ConcatPrecedenceAndEmptySetAggregatesFrom26_2_1_rc2AndMaster) {
    for (Capability c : {Capability::ConcatBelowAdditive, Capability::EmptySetAggregate}) {
        EXPECT_FALSE(has("26.1.6", c)) << capability_name(c);
        EXPECT_FALSE(has("26.2.1-rc1", c)) << capability_name(c);
        EXPECT_TRUE(has("26.2.1-rc2", c)) << capability_name(c);
        EXPECT_TRUE(has("26.2.1", c)) << capability_name(c);
        EXPECT_FALSE(has("26.3.0", c)) << capability_name(c);  // the tag came before the fixes
        EXPECT_TRUE(has("26.3.0-142-g812716f7e", c)) << capability_name(c);
    }
    EXPECT_FALSE(has("26.3.0-48-gabc", Capability::ConcatBelowAdditive));
    EXPECT_TRUE(has("26.3.0-49-g27cbad323", Capability::ConcatBelowAdditive));
    EXPECT_FALSE(has("26.3.0-113-gabc", Capability::EmptySetAggregate));
    EXPECT_TRUE(has("26.3.0-114-g9f9068217", Capability::EmptySetAggregate));
}

TEST(CapabilitiesTest, AnUnknownVersionHasNothing) {
    for (const CapabilityRow &row : capability_table()) {
        EXPECT_FALSE(has("", row.capability)) << row.name;
        EXPECT_FALSE(has("unknown", row.capability)) << row.name;
        EXPECT_FALSE(has("25.5.1", row.capability)) << row.name;
        EXPECT_TRUE(has("99.0.0", row.capability)) << row.name;
    }
}

TEST(CapabilitiesTest, TableEqualsTheJsonTheEmulatorReads) {
    std::ifstream in(std::string(PICOROUTE_SOURCE_DIR) + "/src/core/capabilities.json");
    ASSERT_TRUE(in.good());
    nlohmann::json doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc.at("dnf_chain_limit").get<size_t>(), kDnfChainLimit);
    const nlohmann::json &rows = doc.at("capabilities");
    EXPECT_EQ(rows.size(), capability_table().size());
    for (const CapabilityRow &row : capability_table()) {
        ASSERT_TRUE(rows.contains(row.name)) << row.name;
        std::vector<std::string> since(row.since.begin(), row.since.end());
        EXPECT_EQ(rows.at(row.name).at("since").get<std::vector<std::string>>(), since) << row.name;
        for (const char *first : row.since)
            EXPECT_TRUE(parse_version(first).has_value()) << first;
    }
}

TEST(CapabilitiesTest, ACapabilitySetAnswersAsHas) {
    for (const char *version :
         {"25.5.10", "25.6.0-40-gabc", "26.1.0", "26.1.1", "26.1.2", "26.1.5", "26.1.6", "26.2.0",
          "26.2.1-rc1", "26.2.1-rc2", "26.2.1", "26.3.0", "26.3.0-115-gdef426247",
          "picodata 26.2.1", "27.1.1", "", "not a version"}) {
        CapabilitySet set(version);
        for (const CapabilityRow &row : capability_table())
            EXPECT_EQ(set.has(row.capability), has(version, row.capability))
                << version << " " << row.name;
    }
    EXPECT_EQ(CapabilitySet().bits(), 0u);
    EXPECT_EQ(CapabilitySet("garbage").bits(), 0u);
    EXPECT_TRUE(CapabilitySet("26.2.1").has(Capability::PruneByBucketId));
    EXPECT_FALSE(CapabilitySet("26.2.0").has(Capability::PruneByBucketId));
}

}  // namespace
}  // namespace picoroute::caps
