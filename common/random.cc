// SPDX-License-Identifier: BSD-3-Clause
// random: kernel-sourced randomness.
#include "common/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>

#include "common/assert.h"

namespace cellgate::common {

void random_bytes(void* buf, size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  while (n > 0) {
    ssize_t got = ::getrandom(p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    CELLGATE_ASSERT(got > 0);
    p += got;
    n -= static_cast<size_t>(got);
  }
}

std::string to_hex(const void* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 0xf];
  }
  return out;
}

std::string random_hex(size_t n_bytes) {
  std::string raw(n_bytes, '\0');
  random_bytes(raw.data(), n_bytes);
  return to_hex(raw.data(), n_bytes);
}

std::string random_uuid() {
  uint8_t b[16];
  random_bytes(b, sizeof b);
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string h = to_hex(b, sizeof b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" +
         h.substr(20, 12);
}

}  // namespace cellgate::common
