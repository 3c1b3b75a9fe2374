// SPDX-License-Identifier: BSD-3-Clause
// address: what an IP address is (loopback, private, metadata …), CIDR ranges, the host's own addresses.
#include "egress/address.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace cellgate::egress {
namespace {

namespace ip = boost::asio::ip;

struct Range4 {
  uint32_t base;
  unsigned prefix;
  AddressClass cls;
};

constexpr uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) { return (a << 24) | (b << 16) | (c << 8) | d; }

// Most specific first: the first match wins.
constexpr Range4 kRanges4[] = {
    {v4(169, 254, 169, 254), 32, AddressClass::kMetadata},
    {v4(255, 255, 255, 255), 32, AddressClass::kMulticast},  // limited broadcast
    {v4(0, 0, 0, 0), 8, AddressClass::kUnspecified},
    {v4(10, 0, 0, 0), 8, AddressClass::kPrivate},
    {v4(100, 64, 0, 0), 10, AddressClass::kPrivate},
    {v4(127, 0, 0, 0), 8, AddressClass::kLoopback},
    {v4(169, 254, 0, 0), 16, AddressClass::kLinkLocal},
    {v4(172, 16, 0, 0), 12, AddressClass::kPrivate},
    {v4(192, 0, 0, 0), 24, AddressClass::kReserved},
    {v4(192, 0, 2, 0), 24, AddressClass::kReserved},
    {v4(192, 88, 99, 0), 24, AddressClass::kReserved},
    {v4(192, 168, 0, 0), 16, AddressClass::kPrivate},
    {v4(198, 18, 0, 0), 15, AddressClass::kReserved},
    {v4(198, 51, 100, 0), 24, AddressClass::kReserved},
    {v4(203, 0, 113, 0), 24, AddressClass::kReserved},
    {v4(224, 0, 0, 0), 4, AddressClass::kMulticast},
    {v4(240, 0, 0, 0), 4, AddressClass::kReserved},
};

bool in4(uint32_t a, uint32_t base, unsigned prefix) {
  uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return (a & mask) == (base & mask);
}

AddressClass classify4(uint32_t a) {
  for (const auto& r : kRanges4) {
    if (in4(a, r.base, r.prefix)) return r.cls;
  }
  return AddressClass::kPublic;
}

using Bytes16 = ip::address_v6::bytes_type;

bool prefix_equal(const uint8_t* a, const uint8_t* b, unsigned prefix) {
  unsigned full = prefix / 8, rest = prefix % 8;
  if (std::memcmp(a, b, full) != 0) return false;
  if (rest == 0) return true;
  auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

uint32_t v4_at(const Bytes16& b, size_t offset) {
  return (uint32_t{b[offset]} << 24) | (uint32_t{b[offset + 1]} << 16) | (uint32_t{b[offset + 2]} << 8) | b[offset + 3];
}

struct Range6 {
  std::array<uint8_t, 16> base;
  unsigned prefix;
  AddressClass cls;
};

constexpr Range6 kRanges6[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54}, 128, AddressClass::kMetadata},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 128, AddressClass::kUnspecified},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, AddressClass::kLoopback},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 96, AddressClass::kReserved},  // IPv4-compatible
    {{0, 0x64, 0xff, 0x9b, 0, 1}, 48, AddressClass::kPrivate},                       // local-use NAT64
    {{0x01, 0x00}, 64, AddressClass::kReserved},                                      // discard
    {{0x20, 0x01, 0x0d, 0xb8}, 32, AddressClass::kReserved},                          // documentation
    {{0x20, 0x01, 0x00, 0x00}, 23, AddressClass::kReserved},                          // IETF (Teredo, ORCHID)
    {{0xfc}, 7, AddressClass::kPrivate},
    {{0xfe, 0x80}, 10, AddressClass::kLinkLocal},
    {{0xfe, 0xc0}, 10, AddressClass::kPrivate},  // deprecated site-local
    {{0xff}, 8, AddressClass::kMulticast},
};

AddressClass classify6(const ip::address_v6& a) {
  const Bytes16 b = a.to_bytes();
  if (a.is_v4_mapped()) return classify4(v4_at(b, 12));
  static constexpr uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b};
  if (prefix_equal(b.data(), kNat64, 96)) return classify4(v4_at(b, 12));
  if (b[0] == 0x20 && b[1] == 0x02) return classify4(v4_at(b, 2));  // 6to4
  for (const auto& r : kRanges6) {
    if (prefix_equal(b.data(), r.base.data(), r.prefix)) return r.cls;
  }
  return AddressClass::kPublic;
}

// The address with every bit past `prefix` cleared.
IpAddress masked(const IpAddress& a, unsigned prefix) {
  if (a.is_v4()) {
    uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
    return IpAddress(ip::address_v4(a.to_v4().to_uint() & mask));
  }
  Bytes16 b = a.to_v6().to_bytes();
  for (unsigned bit = prefix; bit < 128; ++bit) b[bit / 8] = static_cast<uint8_t>(b[bit / 8] & ~(0x80u >> (bit % 8)));
  return IpAddress(ip::address_v6(b));
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

AddressClass classify(const IpAddress& address) {
  return address.is_v4() ? classify4(address.to_v4().to_uint()) : classify6(address.to_v6());
}

const char* describe(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic: return "a public address";
    case AddressClass::kLoopback: return "a loopback address";
    case AddressClass::kPrivate: return "a private address";
    case AddressClass::kLinkLocal: return "a link-local address";
    case AddressClass::kMetadata: return "the cloud metadata address";
    case AddressClass::kUnspecified: return "an unspecified address";
    case AddressClass::kMulticast: return "a multicast or broadcast address";
    case AddressClass::kReserved: return "a reserved address";
  }
  return "address";
}

bool Cidr::contains(const IpAddress& a) const {
  if (a.is_v4() != base.is_v4()) return false;
  if (a.is_v4()) return in4(a.to_v4().to_uint(), base.to_v4().to_uint(), prefix);
  return prefix_equal(a.to_v6().to_bytes().data(), base.to_v6().to_bytes().data(), prefix);
}

std::string Cidr::str() const { return base.to_string() + "/" + std::to_string(prefix); }

std::optional<IpAddress> parse_ip_literal(std::string_view text) {
  if (text.empty() || text.size() > 45) return std::nullopt;
  if (text.find(':') == std::string_view::npos) {
    // Strict dotted quad: inet_aton's octal, hex and short forms are how "localhost" gets spelled
    // so that a filter misses it.
    uint32_t value = 0;
    int parts = 0;
    size_t start = 0;
    while (start <= text.size()) {
      size_t dot = text.find('.', start);
      std::string_view part = text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
      if (!all_digits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return std::nullopt;
      unsigned n = static_cast<unsigned>(std::stoul(std::string(part)));
      if (n > 255 || ++parts > 4) return std::nullopt;
      value = (value << 8) | n;
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
    if (parts != 4) return std::nullopt;
    return IpAddress(ip::address_v4(value));
  }
  if (text.find('%') != std::string_view::npos) return std::nullopt;  // no zone ids
  boost::system::error_code ec;
  auto a = ip::make_address_v6(std::string(text), ec);
  if (ec) return std::nullopt;
  return IpAddress(a);
}

std::optional<Cidr> parse_cidr(std::string_view text) {
  size_t slash = text.find('/');
  auto addr = parse_ip_literal(text.substr(0, slash));
  if (!addr) return std::nullopt;
  unsigned max = addr->is_v4() ? 32 : 128;
  unsigned prefix = max;
  if (slash != std::string_view::npos) {
    std::string_view p = text.substr(slash + 1);
    if (!all_digits(p) || p.size() > 3) return std::nullopt;
    prefix = static_cast<unsigned>(std::stoul(std::string(p)));
    if (prefix > max) return std::nullopt;
  }
  // Host bits set below the prefix: refuse rather than guess.
  if (masked(*addr, prefix) != *addr) return std::nullopt;
  return Cidr{*addr, prefix};
}

bool HostAddresses::contains(const IpAddress& a) {
  if (!fixed_ && std::chrono::steady_clock::now() - loaded_ > refresh_) reload();
  return std::find(addresses_.begin(), addresses_.end(), a) != addresses_.end();
}

void HostAddresses::set_fixed(std::vector<IpAddress> addresses) {
  fixed_ = true;
  addresses_ = std::move(addresses);
}

void HostAddresses::reload() {
  loaded_ = std::chrono::steady_clock::now();
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return;  // keep the last good list
  addresses_.clear();
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      addresses_.push_back(IpAddress(ip::address_v4(ntohl(sin->sin_addr.s_addr))));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      Bytes16 b;
      std::memcpy(b.data(), &sin6->sin6_addr, 16);
      addresses_.push_back(IpAddress(ip::address_v6(b)));
    }
  }
  ::freeifaddrs(list);
}

}  // namespace cellgate::egress
