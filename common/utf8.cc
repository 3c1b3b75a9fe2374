// SPDX-License-Identifier: BSD-3-Clause
#include "common/utf8.h"

#include <cstdint>

namespace cellgate::common {

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    // The second byte's allowed range depends on the lead byte (RFC 3629 section 4): this is
    // what excludes overlong encodings, UTF-16 surrogates and code points above U+10FFFF.
    int extra = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c == 0xE0) {
      extra = 2, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      extra = 2;
    } else if (c == 0xED) {
      extra = 2, hi = 0x9F;
    } else if (c == 0xF0) {
      extra = 3, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      extra = 3;
    } else if (c == 0xF4) {
      extra = 3, hi = 0x8F;
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= extra; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
    }
    p += extra + 1;
  }
  return true;
}

}  // namespace cellgate::common
