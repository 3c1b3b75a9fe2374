// SPDX-License-Identifier: BSD-3-Clause
// address: what an IP address is (loopback, private, metadata …), CIDR ranges, the host's own addresses.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>

namespace cellgate::egress {

using IpAddress = boost::asio::ip::address;

// Why an address is not an ordinary public one. The proxy refuses every class but kPublic unless
// the rule that matched names the address (Rule::addresses); kUnspecified and kMulticast never.
enum class AddressClass {
  kPublic,
  kLoopback,     // 127.0.0.0/8, ::1
  kPrivate,      // RFC 1918, 100.64.0.0/10 (CGNAT), fc00::/7 (ULA)
  kLinkLocal,    // 169.254.0.0/16, fe80::/10
  kMetadata,     // 169.254.169.254, fd00:ec2::254 (cloud instance metadata)
  kUnspecified,  // 0.0.0.0/8, :: (connect() to them reaches this host)
  kMulticast,    // 224.0.0.0/4, 255.255.255.255, ff00::/8
  kReserved,     // documentation, benchmarking, 240.0.0.0/4, 192.0.0.0/24, 100::/64 …
};

// The class of an address. IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
// addresses are classified by the IPv4 address they carry, so none of them launders a private one.
AddressClass classify(const IpAddress& address);
// "a loopback address", "the cloud metadata address", … (for refusal reasons).
const char* describe(AddressClass c);

struct Cidr {
  IpAddress base;       // with the host bits cleared
  unsigned prefix = 0;  // 0..32 or 0..128
  bool contains(const IpAddress& a) const;
  std::string str() const;  // "10.0.0.0/8", "::1/128"
};
// "10.0.0.0/8", "192.0.2.7" (a /32), "::1", "fd00::/8". nullopt for anything else, including
// host bits set below the prefix ("10.0.0.1/8"), which is a typo more often than an intent.
std::optional<Cidr> parse_cidr(std::string_view text);
// An IP literal as a URL or CONNECT authority carries it: "1.2.3.4", "::1" (no brackets here).
// Only the canonical dotted quad: "127.1", "0x7f.0.0.1" and "2130706433" are not IPv4 literals.
std::optional<IpAddress> parse_ip_literal(std::string_view text);

// The addresses of this host's interfaces (getifaddrs), re-read at most once per `refresh`.
// runs in: one thread (the proxy's io thread).
class HostAddresses {
 public:
  explicit HostAddresses(std::chrono::milliseconds refresh = std::chrono::seconds(5)) : refresh_(refresh) {}
  bool contains(const IpAddress& a);
  // For tests: a fixed list that is never re-read.
  void set_fixed(std::vector<IpAddress> addresses);

 private:
  void reload();
  std::chrono::milliseconds refresh_;
  std::chrono::steady_clock::time_point loaded_{};
  bool fixed_ = false;
  std::vector<IpAddress> addresses_;
};

}  // namespace cellgate::egress
