// SPDX-License-Identifier: BSD-3-Clause
// size_text: byte sizes as people write them in options and policies ("512M", "1.5G", "4096").
#include "common/size_text.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace cellgate::common {

bool parse_size(std::string_view text, uint64_t& out) {
  std::string_view num = text;
  uint64_t mult = 1;
  for (std::string_view suffix : {"iB", "B"}) {
    if (num.size() > suffix.size() && num.ends_with(suffix)) {
      num.remove_suffix(suffix.size());
      break;
    }
  }
  if (!num.empty()) {
    switch (num.back()) {
      case 'K': case 'k': mult = 1ULL << 10; break;
      case 'M': case 'm': mult = 1ULL << 20; break;
      case 'G': case 'g': mult = 1ULL << 30; break;
      case 'T': case 't': mult = 1ULL << 40; break;
      default: break;
    }
    if (mult != 1) num.remove_suffix(1);
  }
  if (num.empty() || num.size() > 24) return false;
  std::string s(num);
  for (char c : s) {
    if ((c < '0' || c > '9') && c != '.') return false;
  }
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  double bytes = v * static_cast<double>(mult);
  if (bytes < 1 || bytes > 9.0e18) return false;
  out = static_cast<uint64_t>(bytes);
  return true;
}

}  // namespace cellgate::common
