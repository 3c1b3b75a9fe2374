// SPDX-License-Identifier: BSD-3-Clause
// kernel_ws_client: a blocking client of a kernel's channels WebSocket.
#include "client/kernel_ws_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <fmt/format.h>

#include "common/random.h"
#include "common/time_format.h"
#include "protocol/json_text.h"

namespace cellgate::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using common::Errc;
using common::make_error;
using nlohmann::json;
using tcp = asio::ip::tcp;

// Each call starts one asynchronous operation on a private io_context and runs it to completion: the
// tcp_stream's expiry is what bounds it (synchronous Beast calls cannot time out). A timed-out
// operation closes the socket, so a socket that timed out once stays failed.
struct KernelWsClient::Impl {
  asio::io_context io{1};
  websocket::stream<beast::tcp_stream> ws{io};
  beast::flat_buffer buffer;
  std::string session = common::random_uuid();
  std::string where;
  bool failed = false;

  template <typename Start>
  beast::error_code run(Clock::time_point deadline, Start start) {
    beast::error_code result = asio::error::operation_aborted;
    beast::get_lowest_layer(ws).expires_after(std::max(Clock::duration::zero(), deadline - Clock::now()));
    start([&result](beast::error_code ec, auto&&...) { result = ec; });
    io.restart();
    io.run();
    return result;
  }

  common::Error fail(const char* stage, const beast::error_code& ec) {
    failed = true;
    if (ec == beast::error::timeout) return make_error(Errc::kTimeout, fmt::format("{}: timed out ({})", where, stage));
    return make_error(Errc::kUnavailable, fmt::format("{}: {} failed: {}", where, stage, ec.message()));
  }
};

KernelWsClient::KernelWsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KernelWsClient::~KernelWsClient() {
  if (!impl_->failed) {
    beast::error_code ignored;
    beast::get_lowest_layer(impl_->ws).socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
}

common::Result<std::unique_ptr<KernelWsClient>> KernelWsClient::connect(const BaseUrl& url, const std::string& token,
                                                                    const std::string& kernel_id,
                                                                    std::chrono::seconds timeout) {
  auto impl = std::make_unique<Impl>();
  impl->where = fmt::format("kernel WebSocket at {}:{}", url.host, url.port);
  const auto deadline = Clock::now() + timeout;
  tcp::resolver resolver(impl->io);
  beast::error_code ec;
  auto endpoints = resolver.resolve(url.host, url.port, ec);
  if (ec) return impl->fail("resolve", ec);
  ec = impl->run(deadline, [&](auto handler) {
    beast::get_lowest_layer(impl->ws).async_connect(endpoints, [handler](beast::error_code e, const tcp::endpoint&) mutable {
      handler(e);
    });
  });
  if (ec) return impl->fail("connect", ec);
  impl->ws.set_option(websocket::stream_base::decorator([token](websocket::request_type& req) {
    req.set(beast::http::field::user_agent, "cellgate-run");
    req.set("X-Cellgate-Client", "cellgate-run");  // the journal's label for what this client runs
    if (!token.empty()) req.set(beast::http::field::authorization, "token " + token);
  }));
  impl->ws.read_message_max(kMaxMessageBytes);
  const bool v6 = url.host.find(':') != std::string::npos;
  std::string host = (v6 ? "[" + url.host + "]" : url.host) + ":" + url.port;
  std::string target = url.base + "api/kernels/" + escape_segment(kernel_id) + "/channels?session_id=" + impl->session;
  websocket::response_type response;
  ec = impl->run(deadline, [&](auto handler) { impl->ws.async_handshake(response, host, target, handler); });
  if (ec) {
    if (response.result_int() != 0 && response.result_int() != 101) {
      return make_error(Errc::kUnavailable,
                        fmt::format("{}: upgrade refused with HTTP {}", impl->where, response.result_int()));
    }
    return impl->fail("handshake", ec);
  }
  return std::unique_ptr<KernelWsClient>(new KernelWsClient(std::move(impl)));
}

common::Result<std::string> KernelWsClient::send(const std::string& channel, const std::string& msg_type, json content,
                                               Clock::time_point deadline) {
  if (impl_->failed) return make_error(Errc::kUnavailable, impl_->where + ": closed");
  std::string id = common::random_uuid();
  json msg = {{"header",
               {{"msg_id", id}, {"msg_type", msg_type}, {"session", impl_->session}, {"username", "cellgate-run"},
                {"date", common::iso8601_now()}, {"version", "5.3"}}},
              {"parent_header", json::object()},
              {"metadata", json::object()},
              {"content", std::move(content)},
              {"channel", channel},
              {"buffers", json::array()}};
  std::string text = msg.dump(-1, ' ', false, json::error_handler_t::replace);
  impl_->ws.text(true);
  auto ec = impl_->run(deadline, [&](auto handler) { impl_->ws.async_write(asio::buffer(text), handler); });
  if (ec) return impl_->fail("write", ec);
  return id;
}

common::Result<KernelMessage> KernelWsClient::read(Clock::time_point deadline) {
  if (impl_->failed) return make_error(Errc::kUnavailable, impl_->where + ": closed");
  impl_->buffer.clear();
  auto ec = impl_->run(deadline, [&](auto handler) { impl_->ws.async_read(impl_->buffer, handler); });
  if (ec == websocket::error::closed) {
    impl_->failed = true;
    return make_error(Errc::kUnavailable, impl_->where + ": closed by the gateway");
  }
  if (ec) return impl_->fail("read", ec);
  std::string_view data(static_cast<const char*>(impl_->buffer.data().data()), impl_->buffer.size());
  auto msg = protocol::parse_untrusted_json(data);
  if (msg.is_discarded() || !msg.is_object()) return make_error(Errc::kInternal, impl_->where + ": a frame is not JSON");
  KernelMessage out;
  out.bytes = data.size();
  out.channel = msg.value("channel", "");
  auto header = msg.find("header");
  if (header != msg.end() && header->is_object()) out.msg_type = header->value("msg_type", "");
  auto parent = msg.find("parent_header");
  if (parent != msg.end() && parent->is_object()) out.parent_id = parent->value("msg_id", "");
  auto content = msg.find("content");
  out.content = content != msg.end() && content->is_object() ? std::move(*content) : json::object();
  auto metadata = msg.find("metadata");
  out.metadata = metadata != msg.end() && metadata->is_object() ? std::move(*metadata) : json::object();
  return out;
}

}  // namespace cellgate::client
