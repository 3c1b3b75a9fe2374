// SPDX-License-Identifier: BSD-3-Clause
// resolver: names → addresses for the proxy: a hosts file first (--hosts), then the system resolver.
#include "egress/resolver.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "egress/target.h"

namespace cellgate::egress {
namespace {

namespace asio = boost::asio;
using common::Errc;
using common::make_error;

constexpr size_t kMaxHostsBytes = 4 << 20;

IpAddress unmapped(const IpAddress& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return IpAddress(asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()));
  return a;
}

}  // namespace

common::Result<HostsTable> parse_hosts(const std::string& text, const std::string& origin) {
  HostsTable table;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string addr_text, name;
    if (!(words >> addr_text)) continue;
    auto addr = parse_ip_literal(addr_text);
    if (!addr) return make_error(Errc::kBadRequest, fmt::format("{}:{}: '{}' is not an IP address", origin, n, addr_text));
    bool any = false;
    while (words >> name) {
      auto canonical = canonical_host_name(name);
      if (!canonical) return make_error(Errc::kBadRequest, fmt::format("{}:{}: '{}' is not a host name", origin, n, name));
      table[*canonical].push_back(unmapped(*addr));
      any = true;
    }
    if (!any) return make_error(Errc::kBadRequest, fmt::format("{}:{}: an address without a name", origin, n));
  }
  return table;
}

common::Result<HostsTable> load_hosts_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::kBadRequest, "cannot read hosts file " + path);
  std::string text(kMaxHostsBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxHostsBytes) return make_error(Errc::kTooLarge, "hosts file " + path + " is larger than 4 MiB");
  return parse_hosts(text, path);
}

Resolver::Resolver(asio::any_io_executor executor, Options options)
    : executor_(executor), options_(std::move(options)) {}

asio::awaitable<Resolution> Resolver::resolve(std::string host) {
  if (auto it = options_.hosts.find(host); it != options_.hosts.end()) co_return Resolution{it->second, ""};
  if (!options_.system) co_return Resolution{{}, host + " is not a known host name"};
  const auto now = std::chrono::steady_clock::now();
  if (auto it = cache_.find(host); it != cache_.end()) {
    if (it->second.expires > now) co_return Resolution{it->second.addresses, ""};
    cache_.erase(it);
  }
  // getaddrinfo cannot be interrupted; the timer only stops our wait (cancel() completes the
  // pending resolve with operation_aborted while the lookup finishes on the resolver thread).
  // One resolver object per lookup, so that a timeout cancels this lookup only.
  auto lookup = std::make_shared<asio::ip::tcp::resolver>(executor_);
  auto timer = std::make_shared<asio::steady_timer>(executor_, options_.timeout);
  timer->async_wait([lookup, timer](boost::system::error_code ec) {
    if (!ec) lookup->cancel();
  });
  boost::system::error_code ec;
  auto results = co_await lookup->async_resolve(host, "", asio::redirect_error(asio::use_awaitable, ec));
  timer->cancel();
  if (ec == asio::error::operation_aborted) co_return Resolution{{}, host + ": name lookup timed out"};
  if (ec) co_return Resolution{{}, host + ": name lookup failed (" + ec.message() + ")"};
  Resolution r;
  for (const auto& entry : results) {
    IpAddress a = unmapped(entry.endpoint().address());
    if (std::find(r.addresses.begin(), r.addresses.end(), a) == r.addresses.end()) r.addresses.push_back(a);
  }
  if (cache_.size() >= options_.max_cached) cache_.erase(cache_.begin());
  cache_[host] = Cached{r.addresses, now + options_.ttl};
  co_return r;
}

}  // namespace cellgate::egress
