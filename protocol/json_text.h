// SPDX-License-Identifier: BSD-3-Clause
// json_text: small checks and writers on JSON text, for splicing parts without building trees.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace cellgate::protocol {

// Parses JSON that a client or a kernel sent: a discarded value (as for invalid JSON) when the text
// nests deeper than detail::kMaxJsonDepth. nlohmann parses iteratively, but copying or dumping the
// tree recurses once per level, so a small deep body would overflow the stack. Never throws.
nlohmann::json parse_untrusted_json(std::string_view text);

}  // namespace cellgate::protocol

namespace cellgate::protocol::detail {

// Deepest nesting accepted where we re-serialise a tree: nlohmann's dump() recurses once per
// level, so an unbounded depth from a client would be a stack overflow. Python's json gives up
// near 1000 levels (its recursion limit), so real messages stay far below this.
inline constexpr size_t kMaxJsonDepth = 512;

// Appends s as a JSON string literal (quotes included), escaping as Python's json.dumps does for
// ASCII: \" \\ \n \r \t \b \f and \u00XX for other control bytes. Other bytes pass through, so
// the caller must supply valid UTF-8 (e.g. a string that came out of a JSON parser).
void append_json_string(std::string& out, std::string_view s);

// True when no [ or { in the text (outside string literals) nests deeper than limit.
// Linear, no allocation; works on any bytes, valid JSON or not.
bool json_depth_within(std::string_view text, size_t limit);

// True when text is one complete, valid JSON object (UTF-8 checked). Validates without building
// a tree; never throws. Lone \u surrogate escapes pass, as in Python's json (nlohmann alone refuses).
bool is_json_object_text(std::string_view text);

}  // namespace cellgate::protocol::detail
