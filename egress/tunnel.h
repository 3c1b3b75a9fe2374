// SPDX-License-Identifier: BSD-3-Clause
// tunnel: copying bytes both ways between a kernel and an upstream (CONNECT, 101 upgrades), metered.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace cellgate::egress {

struct TunnelMeter {
  std::function<bool(uint64_t)> out;  // kernel → upstream; false: a cap is reached
  std::function<bool(uint64_t)> in;   // upstream → kernel
};

// Copies until both directions have ended (an EOF is passed on as a half-close), one fails, the
// meter refuses a chunk, or no byte moves either way for `idle`. Returns "" for an ordinary end,
// else why it was cut. runs in: the io thread.
boost::asio::awaitable<std::string> relay_tunnel(boost::beast::tcp_stream& client, boost::beast::tcp_stream& upstream,
                                                 const TunnelMeter& meter, std::chrono::milliseconds idle);

}  // namespace cellgate::egress
