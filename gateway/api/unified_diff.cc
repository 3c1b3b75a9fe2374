// SPDX-License-Identifier: BSD-3-Clause
// unified_diff: applies a unified diff to one file's text.
#include "gateway/api/unified_diff.h"

#include <charconv>
#include <vector>

#include <fmt/core.h>

namespace cellgate::api {

using common::Errc;
using common::make_error;

namespace {

// Lines with their newline kept, so a file without a final newline round-trips.
std::vector<std::string> split_keep(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    out.emplace_back(text.substr(start, end - start));
    start = end;
  }
  return out;
}

std::string strip_nl(const std::string& s) { return !s.empty() && s.back() == '\n' ? s.substr(0, s.size() - 1) : s; }

bool parse_range(std::string_view s, long& start) {
  // "-12,5" or "-12": we need only the start line.
  if (s.empty()) return false;
  s.remove_prefix(1);
  size_t comma = s.find(',');
  std::string num(s.substr(0, comma));
  if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) return false;
  // from_chars, not stol: a line number past LONG_MAX is a malformed header, not an exception.
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), start);
  return ec == std::errc() && end == num.data() + num.size();
}

}  // namespace

common::Result<std::string> apply_unified_diff(std::string_view text, std::string_view diff) {
  auto lines = split_keep(text);
  auto dlines = split_keep(diff);
  std::vector<std::string> out;
  size_t pos = 0;  // next source line (0-based) not yet copied
  int hunk = 0;
  size_t i = 0;
  while (i < dlines.size() && dlines[i].rfind("@@", 0) != 0) ++i;  // skip ---/+++ headers
  if (i == dlines.size()) return make_error(Errc::kBadRequest, "diff has no hunk (no line starting with @@)");
  while (i < dlines.size()) {
    const std::string& h = dlines[i];
    if (h.rfind("@@", 0) != 0) return make_error(Errc::kBadRequest, fmt::format("diff line {}: expected a hunk header", i + 1));
    ++hunk;
    size_t sp1 = h.find(' '), sp2 = h.find(' ', sp1 + 1);
    long start = 0;
    if (sp1 == std::string::npos || sp2 == std::string::npos || !parse_range(std::string_view(h).substr(sp1 + 1, sp2 - sp1 - 1), start))
      return make_error(Errc::kBadRequest, fmt::format("hunk {}: malformed header '{}'", hunk, strip_nl(h)));
    size_t at = start > 0 ? static_cast<size_t>(start - 1) : 0;
    if (at < pos || at > lines.size())
      return make_error(Errc::kConflict, fmt::format("hunk {}: starts at line {}, outside the file or before the previous hunk", hunk, start));
    while (pos < at) out.push_back(lines[pos++]);
    ++i;
    for (; i < dlines.size() && dlines[i].rfind("@@", 0) != 0; ++i) {
      const std::string& d = dlines[i];
      if (d.rfind("\\", 0) == 0) {  // "\ No newline at end of file"
        if (!out.empty() && !out.back().empty() && out.back().back() == '\n') out.back().pop_back();
        continue;
      }
      char op = d.empty() ? ' ' : d[0];
      std::string body = d.empty() ? "\n" : d.substr(1);
      if (op == '+') {
        out.push_back(body);
        continue;
      }
      if (op != ' ' && op != '-') return make_error(Errc::kBadRequest, fmt::format("hunk {}: bad line '{}'", hunk, strip_nl(d)));
      if (pos >= lines.size() || strip_nl(lines[pos]) != strip_nl(body))
        return make_error(Errc::kConflict,
                          fmt::format("hunk {}: line {} does not match: expected '{}', found '{}'", hunk, pos + 1,
                                      strip_nl(body), pos < lines.size() ? strip_nl(lines[pos]) : "<end of file>"));
      if (op == ' ') out.push_back(lines[pos]);
      ++pos;
    }
  }
  while (pos < lines.size()) out.push_back(lines[pos++]);
  std::string result;
  for (auto& l : out) result += l;
  return result;
}

}  // namespace cellgate::api
