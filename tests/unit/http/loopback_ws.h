// SPDX-License-Identifier: BSD-3-Clause
// loopback_ws: what the http unit tests share to put two WebSockets on real loopback TCP: a connected
// pair of sockets, the handshake between the two ends, and an io loop that fails instead of hanging.
#pragma once

#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <catch2/catch.hpp>

namespace cellgate::test {

// Runs handlers until done() holds; fails when nothing happens for 10 s.
inline void run_until(boost::asio::io_context& io, const std::function<bool()>& done) {
  while (!done()) {
    if (io.stopped()) io.restart();
    REQUIRE(io.run_one_for(std::chrono::seconds(10)) > 0);
  }
}

struct LoopbackSockets {
  boost::asio::ip::tcp::socket server, client;
};

// Two connected sockets on 127.0.0.1. small_buffers > 0 fixes the client's receive and the server's
// send buffer at that size (fixed sizes also turn off the kernel's autotuning, tcp(7)), so that a
// writer meets back-pressure after little data.
inline LoopbackSockets loopback_sockets(boost::asio::io_context& io, int small_buffers = 0) {
  using tcp = boost::asio::ip::tcp;
  tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket c(io);
  if (small_buffers) {
    c.open(tcp::v4());
    c.set_option(boost::asio::socket_base::receive_buffer_size(small_buffers));
  }
  c.connect(acceptor.local_endpoint());
  tcp::socket s = acceptor.accept();
  if (small_buffers) s.set_option(boost::asio::socket_base::send_buffer_size(small_buffers));
  return {std::move(s), std::move(c)};
}

// The WebSocket handshake between a server stream and a client stream over loopback_sockets().
template <class Server, class Client>
void handshake(boost::asio::io_context& io, Server& server, Client& client) {
  bool accepted = false, shaken = false;
  server.async_accept([&](boost::beast::error_code ec) { accepted = !ec; });
  client.async_handshake("127.0.0.1", "/", [&](boost::beast::error_code ec) { shaken = !ec; });
  run_until(io, [&] { return accepted && shaken; });
}

}  // namespace cellgate::test
