// SPDX-License-Identifier: BSD-3-Clause
// message_relay: one HTTP/1.1 message from one stream to another (Beast's relay pattern), metered.
#pragma once

#include <chrono>
#include <functional>
#include <type_traits>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "egress/http_relay.h"
#include "egress/splice_pump.h"

namespace cellgate::egress {

// An approximation of a header's size on the wire, for the byte counters.
template <bool isRequest, class Fields>
uint64_t header_bytes(const http::header<isRequest, Fields>& h) {
  uint64_t n = 16;
  if constexpr (isRequest) n += h.target().size();
  else n += h.reason().size();
  for (const auto& f : h) n += f.name_string().size() + f.value().size() + 4;
  return n;
}

// The body of a known length: the bytes already buffered, then the rest straight from `in` to `out`
// (through a pipe with splice(2) when both are plain TCP; else a copy through a 64 KiB buffer).
template <class In, class Out>
boost::asio::awaitable<boost::system::error_code> relay_sized_body(In& in, boost::beast::flat_buffer& buffer, Out& out,
                                                                   uint64_t size,
                                                                   const std::function<bool(uint64_t)>& charge,
                                                                   std::chrono::milliseconds idle) {
  namespace asio = boost::asio;
  boost::system::error_code ec;
  const size_t have = static_cast<size_t>(std::min<uint64_t>(size, buffer.size()));
  if (have > 0) {
    if (!charge(have)) co_return asio::error::operation_aborted;
    set_expiry(out, idle);
    co_await asio::async_write(out, asio::buffer(buffer.data().data(), have), asio::redirect_error(asio::use_awaitable, ec));
    buffer.consume(have);
    if (ec) co_return ec;
    size -= have;
  }
  if (size == 0) co_return ec;
  if constexpr (std::is_same_v<In, boost::beast::tcp_stream> && std::is_same_v<Out, boost::beast::tcp_stream>) {
    if (auto pipe = SplicePipe::make()) {
      in.expires_never();
      out.expires_never();
      SpliceResult r = co_await splice_bytes(in.socket(), out.socket(), *pipe, size, charge, idle);
      if (r.error == "egress byte cap reached") co_return asio::error::operation_aborted;
      if (!r.error.empty()) co_return asio::error::connection_aborted;
      co_return r.eof ? asio::error::eof : ec;
    }
  }
  std::vector<char> chunk(64 * 1024);
  while (size > 0) {
    set_expiry(in, idle);
    size_t n = co_await in.async_read_some(asio::buffer(chunk.data(), static_cast<size_t>(std::min<uint64_t>(size, chunk.size()))),
                                          asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    if (!charge(n)) co_return asio::error::operation_aborted;
    set_expiry(out, idle);
    co_await asio::async_write(out, asio::buffer(chunk.data(), n), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return ec;
    size -= n;
  }
  co_return ec;
}

// A request or response the parser `p` has read the header of: its header (as p holds it now) is
// written to `out`, then its body is copied from `in` chunk by chunk (Content-Length and chunked
// alike; Beast re-frames chunks). charge(n) is called per chunk before it is written; false ends
// the relay with operation_aborted. Each read and write has `idle` to make progress.
template <bool isRequest, class In, class Out>
boost::asio::awaitable<boost::system::error_code> relay_message(In& in, boost::beast::flat_buffer& buffer,
                                                               http::parser<isRequest, http::buffer_body>& p, Out& out,
                                                               const std::function<bool(uint64_t)>& charge,
                                                               std::chrono::milliseconds idle) {
  namespace asio = boost::asio;
  boost::system::error_code ec;
  if (!charge(header_bytes(p.get().base()))) co_return asio::error::operation_aborted;
  http::serializer<isRequest, http::buffer_body> sr{p.get()};
  set_expiry(out, idle);
  co_await http::async_write_header(out, sr, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return ec;
  // A sized body needs no parsing: its bytes pass as they are. Chunked and close-delimited bodies
  // go through the parser (Beast re-frames the chunks).
  if (!p.is_done() && !p.chunked() && p.content_length())
    co_return co_await relay_sized_body(in, buffer, out, *p.content_length(), charge, idle);
  std::vector<char> chunk(64 * 1024);
  // Beast reads at most the buffer's free capacity (and at least 512 bytes): a buffer the parser
  // empties every time never grows, so without this a body moves 512 bytes per recvmsg.
  buffer.reserve(chunk.size());
  do {
    if (!p.is_done()) {
      p.get().body().data = chunk.data();
      p.get().body().size = chunk.size();
      set_expiry(in, idle);
      co_await http::async_read(in, buffer, p, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) co_return ec;
      p.get().body().size = chunk.size() - p.get().body().size;
      p.get().body().data = chunk.data();
      p.get().body().more = !p.is_done();
      if (!charge(p.get().body().size)) co_return asio::error::operation_aborted;
    } else {
      p.get().body().data = nullptr;
      p.get().body().size = 0;
    }
    set_expiry(out, idle);
    co_await http::async_write(out, sr, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return ec;
  } while (!p.is_done() && !sr.is_done());
  co_return ec;
}

struct ResponseOutcome {
  boost::system::error_code ec;
  bool wrote_header = false;  // something reached the client (a refusal is no longer possible)
  bool keep_alive = false;    // both sides may send another request on their connections
  bool switched = false;      // 101 Switching Protocols was relayed: the rest is a byte tunnel
};

// Reads the upstream's answer to one request and relays it to the client: 1xx interim answers
// (not 101) pass through first; a HEAD answer or 204/304 is a header only. The client's connection
// stays open only when the client asked (client_keep) and the upstream's framing allows it.
template <class Up, class Client>
boost::asio::awaitable<ResponseOutcome> forward_response(Up& up, boost::beast::flat_buffer& buffer, Client& client, bool head,
                                                        bool client_keep, const std::function<bool(uint64_t)>& charge,
                                                        size_t header_limit, std::chrono::milliseconds wait) {
  namespace asio = boost::asio;
  ResponseOutcome out;
  for (;;) {
    ResponseParser rp;
    rp.header_limit(static_cast<std::uint32_t>(header_limit));
    rp.body_limit(kNoBodyLimit);
    if (head) rp.skip(true);
    set_expiry(up, wait);
    co_await http::async_read_header(up, buffer, rp, asio::redirect_error(asio::use_awaitable, out.ec));
    if (out.ec) co_return out;
    const unsigned status = rp.get().result_int();
    const bool interim = status >= 100 && status < 200 && status != 101;
    out.switched = status == 101;
    out.keep_alive = client_keep && rp.keep_alive() && !out.switched;
    if (!interim && !out.switched) rp.get().keep_alive(out.keep_alive);
    if (interim || out.switched || head || status == 204 || status == 304) {
      // Header only: a serializer would close a chunked body these answers do not have.
      if (!charge(header_bytes(rp.get().base()))) {
        out.ec = asio::error::operation_aborted;
        co_return out;
      }
      http::response<http::empty_body> h{rp.get().base()};
      http::response_serializer<http::empty_body> sr{h};
      set_expiry(client, wait);
      co_await http::async_write_header(client, sr, asio::redirect_error(asio::use_awaitable, out.ec));
      out.wrote_header = true;
      if (out.ec || !interim) co_return out;
      continue;
    }
    out.wrote_header = true;
    out.ec = co_await relay_message(up, buffer, rp, client, charge, wait);
    co_return out;
  }
}

}  // namespace cellgate::egress
