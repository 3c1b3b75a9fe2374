// SPDX-License-Identifier: BSD-3-Clause
// ws_session: one client's kernel channels WebSocket.
#include "gateway/ws_session.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "common/assert.h"
#include "common/log.h"
#include "gateway/kernel_hub.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

template <class Stream>
WsConnection<Stream>::WsConnection(Ws ws, std::shared_ptr<KernelHub> hub, std::string session_id,
                                   protocol::WsProtocol protocol, WsLimits limits)
    : WsSession(std::move(session_id)), ws_(std::move(ws)), hub_(std::move(hub)), protocol_(protocol),
      limits_(limits) {}

template <class Stream>
asio::awaitable<void> WsConnection<Stream>::run(Request req) {
  auto me = shared();
  beast::get_lowest_layer(ws_).expires_never();
  websocket::stream_base::timeout timeouts{};
  timeouts.handshake_timeout = std::chrono::seconds(30);
  // Beast pings when the connection has been idle for half of this, and closes it when a whole idle
  // period passes without any frame from the peer (jupyter_server: ws_ping_interval).
  timeouts.idle_timeout = std::chrono::seconds(2 * limits_.ping_interval_s);
  timeouts.keep_alive_pings = true;
  ws_.set_option(timeouts);
  ws_.read_message_max(limits_.max_message_bytes);
  ws_.auto_fragment(false);
  const bool v1 = protocol_ == protocol::WsProtocol::kV1;
  ws_.set_option(websocket::stream_base::decorator([v1](websocket::response_type& res) {
    res.set(http::field::server, "cellgate");
    if (res.result() != http::status::switching_protocols) {
      // Beast refused the handshake (no key, wrong version, ...) with a plain-text reason: give it our
      // JSON error body like every other refusal.
      std::string why = res.body().empty() ? std::string("WebSocket handshake refused") : res.body();
      res.set(http::field::content_type, "application/json");
      res.body() = nlohmann::json{{"reason", std::string(http::obsolete_reason(res.result()))},
                                  {"message", "WebSocket handshake refused: " + why}}
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      res.prepare_payload();
      return;
    }
    if (v1) res.set(http::field::sec_websocket_protocol, std::string(protocol::kV1Subprotocol));
  }));
  boost::system::error_code ec;
  co_await ws_.async_accept(req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    common::log_debug("msg=\"websocket handshake failed\" error=\"{}\"", ec.message());
    co_return;
  }
  hub_->attach(me);
  hub_->kernel().touch();
  beast::flat_buffer buffer;
  while (!closed_) {
    buffer.clear();
    co_await ws_.async_read(buffer, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
    auto decoded = protocol::decode_ws(protocol_, data, ws_.got_binary());
    if (!decoded) {
      common::log_warn("kernel={} session={} msg=\"dropped client frame\" error=\"{}\"", hub_->kernel().id(),
                       session_id(), decoded.error().message);
      continue;
    }
    hub_->from_client(*this, decoded->channel, std::move(decoded->message));
  }
  closed_ = true;
  hub_->detach(this, take_unsent());
}

template <class Stream>
std::vector<OutgoingPtr> WsConnection<Stream>::take_unsent() {
  std::vector<OutgoingPtr> out;
  // The front message may be half written; the client saw a broken frame, so resend it too.
  for (auto& m : queue_) out.push_back(m);
  queue_.clear();
  queued_bytes_ = 0;
  replayed_left_ = 0;
  return out;
}

template <class Stream>
void WsConnection<Stream>::deliver(const OutgoingPtr& m) {
  if (closed_ || closing_) return;
  queue_.push_back(m);
  queued_bytes_ += m->bytes();
  if (queued_bytes_ > limits_.queue_bytes && queue_.size() > 1) {
    common::log_warn("kernel={} session={} msg=\"client too slow; closing\" queued_bytes={}", hub_->kernel().id(),
                     session_id(), queued_bytes_);
    // Keep the message being written; the rest waits in the replay buffer for a reconnect.
    std::deque<OutgoingPtr> rest(queue_.begin() + (writing_ ? 1 : 0), queue_.end());
    queue_.erase(queue_.begin() + (writing_ ? 1 : 0), queue_.end());
    replayed_left_ = std::min(replayed_left_, queue_.size());
    queued_bytes_ = replayed_left_ == 0 && !queue_.empty() ? queue_.front()->bytes() : 0;
    auto keep = shared();
    hub_->detach(this, std::vector<OutgoingPtr>(rest.begin(), rest.end()));
    close("write queue limit exceeded; reconnect with the same session_id to resume", 1008);
    return;
  }
  if (!writing_) do_write();
}

template <class Stream>
void WsConnection<Stream>::deliver_replayed(const OutgoingPtr& m) {
  if (closed_ || closing_) return;
  CELLGATE_ASSERT(replayed_left_ == queue_.size());  // replayed messages come before any live one
  queue_.push_back(m);
  ++replayed_left_;
  if (!writing_) do_write();
}

template <class Stream>
void WsConnection<Stream>::close(const std::string& reason, uint16_t code) {
  if (closed_ || closing_) return;
  closing_ = true;
  close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), reason);
  if (!writing_) do_write();
}

template <class Stream>
void WsConnection<Stream>::do_write() {
  auto self = shared();
  if (closed_) return;
  if (queue_.empty()) {
    if (!closing_) return;
    writing_ = true;
    ws_.async_close(close_reason_, [self](const boost::system::error_code&) {
      self->writing_ = false;
      self->closed_ = true;
    });
    return;
  }
  writing_ = true;
  const auto& front = queue_.front();
  ws_.binary(front->binary_frame(protocol_));
  // The buffers point into the Outgoing, which stays at the queue's front until this completes.
  auto buffers = front->frame_buffers(protocol_);
  ws_.async_write(buffers, [self](const boost::system::error_code& ec, size_t) {
    self->writing_ = false;
    if (ec) {
      self->closed_ = true;
      return;
    }
    if (!self->queue_.empty()) {
      if (self->replayed_left_ > 0)
        --self->replayed_left_;
      else
        self->queued_bytes_ -= std::min(self->queued_bytes_, self->queue_.front()->bytes());
      self->queue_.pop_front();
    }
    self->do_write();
  });
}

template class WsConnection<PlainStream>;
template class WsConnection<TlsStream>;

}  // namespace cellgate::gateway
