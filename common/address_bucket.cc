// SPDX-License-Identifier: BSD-3-Clause
// address_bucket: the key under which a per-address budget charges a client.
#include "common/address_bucket.h"

#include <arpa/inet.h>

#include <cstring>

namespace cellgate::common {

std::string address_bucket(std::string_view ip) {
  char text[INET6_ADDRSTRLEN + 4] = {};
  if (ip.empty() || ip.size() >= sizeof text) return std::string(ip);
  std::memcpy(text, ip.data(), ip.size());
  in6_addr a6{};
  if (::inet_pton(AF_INET6, text, &a6) != 1) return std::string(ip);  // IPv4, or not an address
  if (IN6_IS_ADDR_V4MAPPED(&a6)) {
    in_addr a4{};
    std::memcpy(&a4, a6.s6_addr + 12, 4);
    ::inet_ntop(AF_INET, &a4, text, sizeof text);
    return text;
  }
  std::memset(a6.s6_addr + 8, 0, 8);
  ::inet_ntop(AF_INET6, &a6, text, sizeof text);
  return std::string(text) + "/64";
}

}  // namespace cellgate::common
