// SPDX-License-Identifier: BSD-3-Clause
// range_request: parsing a single byte range.
#include "gateway/http/range_request.h"

#include <optional>

namespace cellgate::http {

namespace {

constexpr size_t kMaxDigits = 19;  // < 2^63: no overflow, and no one names a larger offset

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> number(std::string_view s) {
  if (s.empty() || s.size() > kMaxDigits) return std::nullopt;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

bool iequals_bytes(std::string_view unit) {
  constexpr std::string_view kBytes = "bytes";
  if (unit.size() != kBytes.size()) return false;
  for (size_t i = 0; i < unit.size(); ++i)
    if ((unit[i] | 0x20) != kBytes[i]) return false;
  return true;
}

}  // namespace

RangeDecision decide_range(std::string_view header, uint64_t size) {
  RangeDecision whole;
  header = trim(header);
  if (header.empty()) return whole;
  const size_t eq = header.find('=');
  if (eq == std::string_view::npos || !iequals_bytes(trim(header.substr(0, eq)))) return whole;
  std::string_view spec = trim(header.substr(eq + 1));
  if (spec.find(',') != std::string_view::npos) return whole;  // a range set: not offered, ignored
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return whole;
  const std::string_view a = trim(spec.substr(0, dash)), b = trim(spec.substr(dash + 1));
  RangeDecision unsatisfiable{RangeAnswer::kUnsatisfiable, {}};
  if (a.empty()) {  // suffix: the last n bytes
    auto n = number(b);
    if (!n) return whole;
    if (*n == 0 || size == 0) return unsatisfiable;
    const uint64_t len = *n < size ? *n : size;
    return RangeDecision{RangeAnswer::kPartial, {size - len, len}};
  }
  auto first = number(a);
  if (!first) return whole;
  std::optional<uint64_t> last;
  if (!b.empty()) {
    last = number(b);
    if (!last || *last < *first) return whole;  // RFC 9110 14.1.1: invalid, so the header is ignored
  }
  if (*first >= size) return unsatisfiable;
  const uint64_t end = (!last || *last >= size) ? size - 1 : *last;
  return RangeDecision{RangeAnswer::kPartial, {*first, end - *first + 1}};
}

std::string content_range(const RangeDecision& d, uint64_t size) {
  if (d.answer == RangeAnswer::kPartial)
    return "bytes " + std::to_string(d.range.first) + "-" + std::to_string(d.range.first + d.range.length - 1) + "/" +
           std::to_string(size);
  return "bytes */" + std::to_string(size);
}

}  // namespace cellgate::http
