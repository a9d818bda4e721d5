// Picodata versions as Picodata writes them, the shipped releases, and the capability table at
// every release and between. The table must equal src/core/capabilities.json, which the emulator
// reads.
#include "core/capabilities.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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

TEST(CapabilitiesTest, ReleasesAreTheShippedBuildsAscending) {
    const std::vector<Release> &all = releases();
    ASSERT_FALSE(all.empty());
    for (size_t i = 0; i < all.size(); i++) {
        std::optional<Version> parsed = parse_version(all[i].version);
        ASSERT_TRUE(parsed.has_value()) << all[i].version;
        EXPECT_EQ(to_string(*parsed), all[i].version) << "written as its build reports it";
        EXPECT_NE(std::string(all[i].source).find('@'), std::string::npos) << all[i].version;
        if (i > 0) {
            EXPECT_TRUE(v(all[i - 1].version) < *parsed) << all[i].version;
        }
    }
    EXPECT_EQ(std::string(all.front().version), "25.5.1");
    EXPECT_EQ(std::string(all.back().version), "26.2.1-rc2");
    for (const char *release : {"25.5.10", "26.1.1", "26.1.6", "26.2.1-rc1", "26.2.1-rc2"})
        EXPECT_TRUE(is_release(release)) << release;
    // Development tags, master builds and what was never shipped are not releases.
    for (const char *other : {"25.6.0", "26.1.0", "26.2.0", "26.3.0", "26.2.1", "26.2.1rc1",
                              "26.3.0-142-g812716f7e", "picodata 26.1.6", "26.2", "", "head"})
        EXPECT_FALSE(is_release(other)) << other;
    EXPECT_EQ(releases_text(), "25.5.1 to 25.5.10, 26.1.1 to 26.1.6, 26.2.1-rc1, 26.2.1-rc2");
}

TEST(CapabilitiesTest, AVersionHasWhatTheNewestReleaseAtOrBeforeItHas) {
    auto governing = [](const char *text) {
        std::optional<Version> r = governing_release(v(text));
        return r ? to_string(*r) : std::string("none");
    };
    EXPECT_EQ(governing("25.5.10"), "25.5.10");
    EXPECT_EQ(governing("26.1.6"), "26.1.6");
    EXPECT_EQ(governing("26.2.1-rc1"), "26.2.1-rc1");
    EXPECT_EQ(governing("26.2.1-rc1-5-gabc"), "26.2.1-rc1");  // a build after the tag
    EXPECT_EQ(governing("26.2.1-rc2"), "26.2.1-rc2");
    EXPECT_EQ(governing("26.2.1"), "26.2.1-rc2");  // the final release, not yet listed
    EXPECT_EQ(governing("26.1.7"), "26.1.6");      // a later release of a line
    EXPECT_EQ(governing("26.1.5-3-gabc"), "26.1.5");
    EXPECT_EQ(governing("26.2.0"), "26.1.6");  // development tags
    EXPECT_EQ(governing("26.2.0-300-gabc"), "26.1.6");
    EXPECT_EQ(governing("26.3.0"), "26.2.1-rc2");
    EXPECT_EQ(governing("26.3.0-115-gdef426247"), "26.2.1-rc2");
    EXPECT_EQ(governing("27.1.1"), "26.2.1-rc2");
    EXPECT_EQ(governing("26.1.0"), "25.5.10");
    EXPECT_EQ(governing("25.6.0-40-gabc"), "25.5.10");
    EXPECT_EQ(governing("25.5.0"), "none");  // before every release: nothing
    EXPECT_EQ(governing("25.4.4"), "none");
}

// Every capability at every release, as the table says it, and at the versions between.
TEST(CapabilitiesTest, EveryCapabilityAtEveryRelease) {
    struct Expect {
        Capability capability;
        std::vector<const char *> with;
    };
    const std::vector<Expect> expected = {
        {Capability::PruneByBucketId, {"26.2.1-rc2"}},
        {Capability::Forward, {"26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::StmtInvalidation,
         {"26.1.1", "26.1.2", "26.1.3", "26.1.4", "26.1.5", "26.1.6", "26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::ReadPreference,
         {"26.1.1", "26.1.2", "26.1.3", "26.1.4", "26.1.5", "26.1.6", "26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::LocalExecution,
         {"26.1.1", "26.1.2", "26.1.3", "26.1.4", "26.1.5", "26.1.6", "26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::IntegralDoubleHash,
         {"26.1.1", "26.1.2", "26.1.3", "26.1.4", "26.1.5", "26.1.6", "26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::DnfChainLimit, {"26.1.6", "26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::SwitchoverRefusal,
         {"26.1.2", "26.1.3", "26.1.4", "26.1.5", "26.1.6", "26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::ExplainSections, {"26.2.1-rc1", "26.2.1-rc2"}},
        {Capability::ExplainInsertBuckets,
         {"26.1.1", "26.1.2", "26.1.3", "26.1.4", "26.1.5", "26.1.6", "26.2.1-rc1", "26.2.1-rc2"}},
    };
    ASSERT_EQ(expected.size(), capability_table().size());
    for (const Expect &e : expected)
        for (const Release &r : releases()) {
            bool with = std::find_if(e.with.begin(), e.with.end(), [&](const char *w) {
                            return std::string(w) == r.version;
                        }) != e.with.end();
            EXPECT_EQ(has(r.version, e.capability), with)
                << capability_name(e.capability) << " at " << r.version;
        }
}

TEST(CapabilitiesTest, BuildsBetweenTagsAndNewerReleases) {
    // rc2 prunes by bucket_id; a build after rc1 does not; master builds are taken as rc2 (the
    // newest release they follow): at 26.3.0-114 that is a wrong "has", which costs N x N storage
    // queries of a 'masters' scatter and never an answer (capabilities.h).
    EXPECT_FALSE(has("26.2.1-rc1-5-gabc", Capability::PruneByBucketId));
    EXPECT_TRUE(has("26.2.1-rc2-3-gabc", Capability::PruneByBucketId));
    EXPECT_TRUE(has("26.2.1", Capability::PruneByBucketId));
    EXPECT_TRUE(has("26.3.0-115-gdef426247", Capability::PruneByBucketId));
    EXPECT_TRUE(has("27.1.1", Capability::PruneByBucketId));
    // A later 26.1 release keeps 26.1.6's capabilities, not 26.2's.
    EXPECT_TRUE(has("26.1.7", Capability::DnfChainLimit));
    EXPECT_FALSE(has("26.1.7", Capability::Forward));
    // Development lines before their first release: what the release before them has.
    EXPECT_FALSE(has("26.1.0", Capability::IntegralDoubleHash));
    EXPECT_FALSE(has("25.6.0-40-gabc", Capability::StmtInvalidation));
    EXPECT_FALSE(has("26.2.0", Capability::Forward));
    EXPECT_TRUE(has("26.2.0", Capability::LocalExecution));
    // The version() text of 26.2.1-rc1 and later.
    EXPECT_TRUE(has("picodata 26.2.1-rc2", Capability::PruneByBucketId));
}

TEST(CapabilitiesTest, DnfMostChainsIsOneOverPicodatasConstant) {
    EXPECT_EQ(kDnfChainLimit, 512u);
    EXPECT_EQ(kDnfMostChains, 513u);
}

TEST(CapabilitiesTest, ExplainFormatsBetweenReleases) {
    // Sections from 26.2.1-rc1: a 26.2.0 development build is taken as 26.1.6 (the old format), a
    // master build as 26.2.1-rc2.
    EXPECT_FALSE(has("26.2.0", Capability::ExplainSections));
    EXPECT_FALSE(has("26.1.7", Capability::ExplainSections));
    EXPECT_TRUE(has("26.2.1-rc1-5-gabc", Capability::ExplainSections));
    EXPECT_TRUE(has("26.3.0", Capability::ExplainSections));
    // An INSERT's buckets from 26.1.1: the 26.1.0 tag and 25.6 builds are taken as 25.5.10, whose
    // EXPLAIN says buckets = unknown.
    EXPECT_FALSE(has("26.1.0", Capability::ExplainInsertBuckets));
    EXPECT_FALSE(has("25.6.0-40-gabc", Capability::ExplainInsertBuckets));
    EXPECT_TRUE(has("26.1.1-3-gabc", Capability::ExplainInsertBuckets));
    EXPECT_TRUE(has("26.3.0", Capability::ExplainInsertBuckets));
}

TEST(CapabilitiesTest, AnUnknownVersionHasNothing) {
    for (const CapabilityRow &row : capability_table()) {
        EXPECT_FALSE(has("", row.capability)) << row.name;
        EXPECT_FALSE(has("unknown", row.capability)) << row.name;
        EXPECT_FALSE(has("25.5.1", row.capability)) << row.name;
        EXPECT_FALSE(has("24.6.1", row.capability)) << row.name;
        EXPECT_TRUE(has("99.0.0", row.capability)) << row.name;
    }
}

TEST(CapabilitiesTest, TableEqualsTheJsonTheEmulatorReads) {
    std::ifstream in(std::string(PICOROUTE_SOURCE_DIR) + "/src/core/capabilities.json");
    ASSERT_TRUE(in.good());
    nlohmann::json doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc.at("dnf_chain_limit").get<size_t>(), kDnfChainLimit);
    const nlohmann::json &shipped = doc.at("releases");
    ASSERT_EQ(shipped.size(), releases().size());
    for (size_t i = 0; i < shipped.size(); i++) {
        EXPECT_EQ(shipped[i].at("version").get<std::string>(), releases()[i].version);
        EXPECT_EQ(shipped[i].at("source").get<std::string>(), releases()[i].source);
    }
    const nlohmann::json &rows = doc.at("capabilities");
    EXPECT_EQ(rows.size(), capability_table().size());
    for (const CapabilityRow &row : capability_table()) {
        ASSERT_TRUE(rows.contains(row.name)) << row.name;
        const nlohmann::json &ranges = rows.at(row.name).at("releases");
        ASSERT_EQ(ranges.size(), row.releases.size()) << row.name;
        for (size_t i = 0; i < ranges.size(); i++) {
            const ReleaseRange &range = row.releases[i];
            EXPECT_EQ(ranges[i].at("first").get<std::string>(), range.first) << row.name;
            EXPECT_EQ(ranges[i].at("last").get<std::string>(), range.last) << row.name;
            EXPECT_EQ(ranges[i].at("source").get<std::string>(), range.source) << row.name;
            // Both ends are releases of one line, in order, and every entry is cited.
            EXPECT_TRUE(is_release(range.first)) << range.first;
            EXPECT_TRUE(is_release(range.last)) << range.last;
            Version first = v(range.first), last = v(range.last);
            EXPECT_TRUE(first.major == last.major && first.minor == last.minor) << row.name;
            EXPECT_FALSE(last < first) << row.name;
            EXPECT_NE(std::string(range.source).find('@'), std::string::npos) << row.name;
        }
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
    EXPECT_TRUE(CapabilitySet("26.2.1-rc2").has(Capability::PruneByBucketId));
    EXPECT_FALSE(CapabilitySet("26.2.1-rc1").has(Capability::PruneByBucketId));
}

}  // namespace
}  // namespace picoroute::caps
