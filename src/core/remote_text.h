// Texts a remote server sends (error messages, details, hints) made fit for a PostgreSQL error
// report: valid UTF-8 and of bounded size. A remote server may send anything: a raw 0xFF byte, an
// overlong or surrogate sequence, or megabytes of text, and all of it would otherwise reach the
// client and the server log unchanged.
//
// - Every byte that does not start a well-formed UTF-8 sequence (RFC 3629: no overlong form, no
//   surrogate, nothing past U+10FFFF, no truncated sequence) becomes U+FFFD.
// - A text longer than the bound is cut at a character boundary and ends with
//   "... (N bytes cut)", N counting the bytes of the original text left out; the result, suffix
//   included, is never longer than the bound.
#pragma once
#include "core/firewall.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace picoroute {

// The bound picoroute applies to each remote message, detail and hint.
constexpr size_t kRemoteTextMax = 8192;

// `text` as valid UTF-8 of at most `max_bytes` bytes (see above). A bound too small for the
// suffix cuts without it.
std::string bounded_utf8(std::string_view text, size_t max_bytes = kRemoteTextMax);

// A message for an error report (a remote text, libpq's): bounded_utf8, without its trailing
// newlines and blanks.
std::string trimmed_message(std::string_view text);
// The same on one line: inner newlines and tabs become blanks.
std::string message_line(std::string_view text);

// The length of the well-formed UTF-8 sequence at the start of `text`, 0 when the first byte does
// not start one (or `text` is empty).
size_t utf8_sequence_length(std::string_view text);

}  // namespace picoroute
