// SPDX-License-Identifier: BSD-3-Clause
// kernel_relay: a kernel WebSocket relayed to the node that holds the kernel.
#include "gateway/api/kernel_relay.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/websocket.hpp>

#include "common/log.h"
#include "common/random.h"
#include "gateway/kernel_hub.h"
#include "protocol/ws_codec.h"

namespace cellgate::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::awaitable;

KernelRelay::KernelRelay(std::unique_ptr<http::PeerWebSocket> upstream, std::string kernel_id, size_t queue_bytes,
                         std::function<awaitable<std::string>()> dead_reason)
    : upstream_(std::move(upstream)),
      messages_(*upstream_),
      kernel_id_(std::move(kernel_id)),
      queue_bytes_(queue_bytes),
      dead_reason_(std::move(dead_reason)),
      synth_session_(common::random_uuid()),
      drained_(upstream_->get_executor()) {}

void KernelRelay::attach(const std::shared_ptr<http::WsSession>& session) {
  session_ = session;
  asio::co_spawn(drained_.get_executor(), [self = shared_from_this()] { return self->read_upstream(); }, asio::detached);
}

void KernelRelay::detach(http::WsSession*, std::vector<http::OutgoingPtr>) {
  session_.reset();
  end("the client left");
}

void KernelRelay::kernel_dead(const std::string& reason) { end("the kernel is dead: " + reason, reason); }

void KernelRelay::end(const std::string& why, const std::string& dead_reason) {
  if (ended_) return;
  ended_ = true;
  common::log_debug("kernel={} msg=\"relay ended\" why=\"{}\"", kernel_id_, why);
  drained_.cancel();
  // Abrupt on purpose: the owner then keeps its replay buffer for this session_id, as for any client
  // whose connection drops.
  boost::system::error_code ec;
  beast::get_lowest_layer(*upstream_).socket().close(ec);
  auto s = session_.lock();
  if (!s) return;
  if (dead_reason.empty()) {
    s->close("the connection to the kernel's node ended; reconnect", 1001);
    return;
  }
  if (s->mid_message()) {  // no message may come before the one half sent ends: the close says it
    s->close("the kernel is dead: " + dead_reason, 1001);
    return;
  }
  // As a kernel that dies on this node is announced; the close comes after these (ws_connection.h).
  for (auto& m : gateway::kernel_state_notice(synth_session_, "dead", dead_reason)) s->deliver(m);
  s->close("the kernel is dead: " + dead_reason, 1001);
}

void KernelRelay::from_client(http::WsSession& session, const std::string& channel, protocol::Message&& message) {
  if (ended_) return;
  auto frame = protocol::encode_ws(protocol::WsProtocol::kV1, channel, message);
  if (outbox_bytes_ + frame.data.size() > queue_bytes_) {
    common::log_warn("kernel={} msg=\"relay: the kernel's node does not read; closing\"", kernel_id_);
    session.close("the kernel's node is not reading", 1008);
    end("upstream too slow");
    return;
  }
  outbox_bytes_ += frame.data.size();
  outbox_.push_back(std::move(frame.data));
  if (!writing_)
    asio::co_spawn(drained_.get_executor(), [self = shared_from_this()] { return self->write_upstream(); },
                   asio::detached);
}

awaitable<void> KernelRelay::write_upstream() {
  writing_ = true;
  boost::system::error_code ec;
  while (!outbox_.empty() && !ended_) {
    std::string frame = std::move(outbox_.front());
    outbox_.pop_front();
    outbox_bytes_ -= frame.size();
    co_await upstream_->async_write(asio::buffer(frame), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      end("write to the kernel's node failed: " + ec.message());
      break;
    }
  }
  writing_ = false;
}

awaitable<void> KernelRelay::read_upstream() {
  boost::system::error_code ec;
  std::string why = "the kernel's node closed the connection";
  while (!ended_) {
    // Read into memory of its own and passed on as it is: a v1 client is sent these very bytes, a large
    // message's as they arrive.
    bool pieces = false;
    if (auto session = session_.lock()) pieces = session->takes_fragments();
    auto read = co_await messages_.next(pieces, ec);
    if (ec) {
      if (ec != beast::websocket::error::closed) why = "the kernel's node connection failed: " + ec.message();
      break;
    }
    auto session = session_.lock();
    if (!session) break;
    if (!read) {
      why = "the kernel's node sent a malformed message: " + read.error().message;
      break;
    }
    session->deliver(read.value());
    if (session->pending_bytes() > queue_bytes_ / 2) {
      // Read on only once the client has taken most of it: the owner's own queue (and its slow-client
      // policy) then sees this client's pace.
      drained_.expires_at(asio::steady_timer::time_point::max());
      session->when_drained(queue_bytes_ / 4, [self = shared_from_this()] { self->drained_.cancel(); });
      co_await drained_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }
  // The owner ended the kernel (its node was declared lost and came back): dead, not a dropped link.
  // The row is read off the io thread (a stalled database holds this ending, nothing else).
  std::string reason;
  if (!ended_ && dead_reason_ && !session_.expired()) reason = co_await dead_reason_();
  end(why, reason);
}

}  // namespace cellgate::api
