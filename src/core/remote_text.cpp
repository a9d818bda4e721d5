// Remote texts made valid UTF-8 and bounded (see remote_text.h).
#include "core/remote_text.h"

#include <algorithm>

namespace picoroute {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool continuation(unsigned char b) {
    return (b & 0xC0) == 0x80;
}

std::string cut_suffix(size_t cut) {
    return "... (" + std::to_string(cut) + " bytes cut)";
}

}  // namespace

size_t utf8_sequence_length(std::string_view text) {
    if (text.empty())
        return 0;
    const auto b0 = static_cast<unsigned char>(text[0]);
    if (b0 < 0x80)
        return 1;
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        if (b0 == 0xE0)
            lo = 0xA0;  // no overlong form
        else if (b0 == 0xED)
            hi = 0x9F;  // no surrogate
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        if (b0 == 0xF0)
            lo = 0x90;  // no overlong form
        else if (b0 == 0xF4)
            hi = 0x8F;  // nothing past U+10FFFF
    } else {
        return 0;
    }
    if (text.size() < n)
        return 0;
    const auto b1 = static_cast<unsigned char>(text[1]);
    if (b1 < lo || b1 > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (!continuation(static_cast<unsigned char>(text[i])))
            return 0;
    return n;
}

namespace {

// Appends the characters of `text` from `*pos` on (invalid bytes replaced) while the output stays
// within `max_bytes` with `reserve` bytes to spare before the last character. Returns whether the
// whole text was taken.
bool append_within(std::string_view text, size_t *pos, size_t max_bytes, size_t reserve,
                   std::string *out) {
    while (*pos < text.size()) {
        size_t n = utf8_sequence_length(text.substr(*pos));
        std::string_view piece = n > 0 ? text.substr(*pos, n) : kReplacement;
        size_t consumed = n > 0 ? n : 1;
        size_t spare = *pos + consumed < text.size() ? reserve : 0;
        if (out->size() + piece.size() + spare > max_bytes)
            return false;
        out->append(piece);
        *pos += consumed;
    }
    return true;
}

}  // namespace

std::string bounded_utf8(std::string_view text, size_t max_bytes) {
    std::string out;
    out.reserve(std::min(text.size(), max_bytes));
    size_t pos = 0;
    if (append_within(text, &pos, max_bytes, 0, &out))
        return out;  // it fits whole
    // Too long: again, with room kept for the suffix (its longest form: at most every byte cut).
    out.clear();
    pos = 0;
    append_within(text, &pos, max_bytes, cut_suffix(text.size()).size(), &out);
    std::string suffix = cut_suffix(text.size() - pos);
    if (out.size() + suffix.size() <= max_bytes)
        out += suffix;
    return out;
}

std::string trimmed_message(std::string_view text) {
    std::string out = bounded_utf8(text);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return out;
}

std::string message_line(std::string_view text) {
    std::string out = trimmed_message(text);
    for (char &c : out)
        if (c == '\n' || c == '\t')
            c = ' ';
    return out;
}

}  // namespace picoroute
