// Remote texts made valid UTF-8 and bounded: invalid sequences replaced, cut at a character
// boundary with the count of bytes left out, never longer than the bound.
#include "core/remote_text.h"

#include <gtest/gtest.h>

#include <string>

namespace picoroute {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(RemoteTextTest, ValidShortTextIsUnchanged) {
    EXPECT_EQ(bounded_utf8("duplicate key"), "duplicate key");
    EXPECT_EQ(bounded_utf8("ключ \xE2\x82\xAC \xF0\x9F\x98\x80"),
              "ключ \xE2\x82\xAC \xF0\x9F\x98\x80");
    EXPECT_EQ(bounded_utf8(""), "");
}

TEST(RemoteTextTest, InvalidBytesBecomeReplacementCharacters) {
    EXPECT_EQ(bounded_utf8("a\xFF"
                           "b"),
              "a" + kFffd + "b");
    EXPECT_EQ(bounded_utf8("\xC0\xAF"), kFffd + kFffd);              // overlong '/'
    EXPECT_EQ(bounded_utf8("\xE0\x80\xAF"), kFffd + kFffd + kFffd);  // overlong, 3 bytes
    EXPECT_EQ(bounded_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // a surrogate
    EXPECT_EQ(bounded_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // past U+10FFFF
    EXPECT_EQ(bounded_utf8("x\xE2\x82"), "x" + kFffd + kFffd);  // truncated sequence
    EXPECT_EQ(bounded_utf8("\x80"), kFffd);                     // lone continuation byte
}

TEST(RemoteTextTest, SequenceLengths) {
    EXPECT_EQ(utf8_sequence_length("a"), 1u);
    EXPECT_EQ(utf8_sequence_length("\xD0\xBA"), 2u);
    EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC"), 3u);
    EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80"), 4u);
    EXPECT_EQ(utf8_sequence_length("\xF5\x80\x80\x80"), 0u);
    EXPECT_EQ(utf8_sequence_length(""), 0u);
}

TEST(RemoteTextTest, LongTextIsCutWithTheCountOfBytesLeftOut) {
    std::string text(4 * 1024 * 1024, 'e');
    std::string out = bounded_utf8(text);
    EXPECT_LE(out.size(), kRemoteTextMax);
    EXPECT_GT(out.size(), kRemoteTextMax - 64);
    std::string suffix = "... (" + std::to_string(text.size() - out.find('.')) + " bytes cut)";
    EXPECT_EQ(out.substr(out.find('.')), suffix);
}

TEST(RemoteTextTest, CutsAtACharacterBoundary) {
    std::string text;
    for (int i = 0; i < 100; i++)
        text += "\xE2\x82\xAC";  // 3 bytes each
    std::string out = bounded_utf8(text, 40);
    EXPECT_LE(out.size(), 40u);
    size_t kept = out.find('.');
    ASSERT_NE(kept, std::string::npos);
    EXPECT_EQ(kept % 3, 0u);
    EXPECT_EQ(out.substr(kept), "... (" + std::to_string(300 - kept) + " bytes cut)");
    EXPECT_EQ(bounded_utf8(out, 1000), out);  // valid UTF-8: unchanged
}

TEST(RemoteTextTest, TextThatFitsExactlyIsNotCut) {
    EXPECT_EQ(bounded_utf8("abcdef", 6), "abcdef");
    std::string out = bounded_utf8("abcdefg", 6);  // no room for the suffix: cut without it
    EXPECT_LE(out.size(), 6u);
}

TEST(RemoteTextTest, InvalidBytesCountInTheBoundAsReplaced) {
    std::string text(10000, '\xFF');
    std::string out = bounded_utf8(text);
    EXPECT_LE(out.size(), kRemoteTextMax);
    EXPECT_EQ(out.substr(0, 3), kFffd);
    EXPECT_NE(out.find("bytes cut)"), std::string::npos);
}

}  // namespace
}  // namespace picoroute
