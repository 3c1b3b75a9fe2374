// SPDX-License-Identifier: BSD-3-Clause
// resolver: names → addresses for the proxy: a hosts file first (--hosts), then the system resolver.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/result.h"
#include "egress/address.h"

namespace cellgate::egress {

using HostsTable = std::map<std::string, std::vector<IpAddress>>;

// Reads an /etc/hosts style file ("ADDRESS NAME [NAME...]", '#' comments). Names are canonical
// host names; errors carry "FILE:LINE: why" (for a one-line config error).
common::Result<HostsTable> load_hosts_file(const std::string& path);
// The same for text already in memory (tests).
common::Result<HostsTable> parse_hosts(const std::string& text, const std::string& origin);

struct Resolution {
  std::vector<IpAddress> addresses;  // IPv4-mapped IPv6 answers are returned as IPv4
  std::string error;                 // one line when there is none
};

// runs in: the proxy's io thread. The system resolver's getaddrinfo runs on Asio's resolver thread;
// answers are cached (a bounded table) so that a slow name costs one lookup per `ttl`.
class Resolver {
 public:
  struct Options {
    HostsTable hosts;
    bool system = true;  // false: the hosts file is the only source (tests: nothing leaves the host)
    std::chrono::milliseconds timeout{5000};
    std::chrono::seconds ttl{30};
    size_t max_cached = 4096;
  };
  Resolver(boost::asio::any_io_executor executor, Options options);
  boost::asio::awaitable<Resolution> resolve(std::string host);  // by value: a coroutine outlives temporaries

 private:
  struct Cached {
    std::vector<IpAddress> addresses;
    std::chrono::steady_clock::time_point expires;
  };
  boost::asio::any_io_executor executor_;
  Options options_;
  std::map<std::string, Cached> cache_;
};

}  // namespace cellgate::egress
