// SPDX-License-Identifier: BSD-3-Clause
// json_scan: reads a few top-level members of a JSON object in one pass, without building a tree.
#pragma once

#include <span>
#include <string_view>

namespace cellgate::protocol::detail {

// One top-level member looked for by scan_top_level.
struct ScanField {
  enum class Kind { kMissing, kString, kOther };
  ScanField(std::string_view wanted) : key(wanted) {}  // NOLINT: implicit, for {"a", "b"} arrays
  std::string_view key;          // compared with the key's text as written
  Kind kind = Kind::kMissing;
  std::string_view value;        // kString: the text between the quotes (it has no escapes);
                                 // kOther: the value's JSON text (e.g. "true", "{...}")
};

// Checks that text is exactly one JSON object (RFC 8259, UTF-8) and fills fields from its top-level
// members; with duplicate keys the last one wins, as in nlohmann. Returns false — meaning "parse it
// properly instead" — for anything it does not answer exactly: invalid JSON, an escape in a key or in
// a wanted string value, \u escapes of surrogates, numbers with exponents or more than 18 characters,
// and nesting deeper than kMaxScanDepth. Linear, no allocation; never throws.
inline constexpr size_t kMaxScanDepth = 64;
bool scan_top_level(std::string_view text, std::span<ScanField> fields);

// True when text is exactly one JSON object by RFC 8259's grammar (strings in UTF-8, any number, any
// \u escape, as JavaScript's and Python's parsers take them). False for anything else, and for
// nesting deeper than kMaxScanDepth. Linear, no allocation; never throws.
bool is_json_object(std::string_view text);

}  // namespace cellgate::protocol::detail
