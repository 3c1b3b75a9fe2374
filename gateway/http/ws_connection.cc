// SPDX-License-Identifier: BSD-3-Clause
// ws_connection: one client's kernel channels WebSocket.
#include "gateway/http/ws_connection.h"

#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "common/assert.h"
#include "common/log.h"

namespace cellgate::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

namespace {
// A write the client takes no byte of for this long drops it: a client that does not read holds its
// queue (at most queue_bytes) for this long at most, even when the kernel sends nothing more.
constexpr auto kWriteStall = std::chrono::seconds(30);
// What one read takes from the socket at most: the granularity at which a message's bytes are read
// (its whole length is charged once its frame header is in, see charge_reading), and the most
// buffer an idle connection keeps after a larger message.
constexpr size_t kReadChunk = 256 * 1024;
}  // namespace

void shed_over(WsUserQueue& user) {
  // What the shed ones still hold leaves user.bytes when their read loops end (this turn or the next):
  // count it as gone here.
  uint64_t held = user.bytes;
  while (user.cap > 0 && held > user.cap) {
    WsUserMember* first = nullptr;
    std::pair<std::chrono::steady_clock::time_point, uint64_t> first_rank{};
    for (WsUserMember* m : user.members) {
      const uint64_t bytes = m->sheddable_bytes();
      if (bytes == 0) continue;
      // Stuck longest (earliest), then gives back most.
      const auto since = m->stuck_since();
      if (!first || since < first_rank.first || (since == first_rank.first && bytes > first_rank.second)) {
        first = m;
        first_rank = {since, bytes};
      }
    }
    if (!first) return;
    held -= std::min(held, first_rank.second);
    first->shed_for_user();  // closing from now on: sheddable_bytes() is 0
  }
}

template <class Stream>
WsConnection<Stream>::WsConnection(Ws ws, std::shared_ptr<WsEndpoint> endpoint, std::string session_id,
                                   protocol::WsProtocol protocol, WsLimits limits)
    : WsSession(std::move(session_id)), ws_(std::move(ws)), endpoint_(std::move(endpoint)), protocol_(protocol),
      limits_(limits), stall_(ws_.get_executor()) {
  if (limits_.user_queue) limits_.user_queue->members.push_back(this);
}

template <class Stream>
asio::awaitable<boost::system::error_code> WsConnection<Stream>::run(Request req) {
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
    co_return boost::system::error_code{};
  }
  endpoint_->attach(me);
  beast::flat_buffer buffer;
  while (!closed_) {
    buffer.clear();
    bool refused = false;
    do {
      co_await ws_.async_read_some(buffer, kReadChunk, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      // The bytes in, and the rest of the frame being read as its header declared it (read_size_hint
      // is exactly that while a frame is unfinished): what this message will hold, charged before it is.
      const uint64_t whole = buffer.size() + (ws_.is_message_done() ? 0 : ws_.read_size_hint(1));
      if (!charge_reading(whole)) {
        refused = true;
        break;
      }
      // One allocation of what was charged, rather than doublings of it.
      if (buffer.capacity() < whole) buffer.reserve(static_cast<size_t>(whole));
    } while (!ws_.is_message_done());
    if (ec) break;
    if (refused) {
      common::log_warn("kernel={} session={} user={} msg=\"client message refused: the user's messages being read "
                       "would hold more than ws-read-per-user\" read_cap={} reading={}",
                       endpoint_->log_id(), session_id(), user(), limits_.user_queue->read_cap,
                       limits_.user_queue->reading);
      buffer = beast::flat_buffer();
      close("message too big: past this user's ws-read-per-user", 1009);
      // Read on, keeping nothing, until the close handshake ends the connection (Beast's handshake
      // timeout bounds it; a client that reads nothing is dropped by the write stall).
      while (!ec) {
        buffer.clear();
        co_await ws_.async_read_some(buffer, kReadChunk, asio::redirect_error(asio::use_awaitable, ec));
      }
      ec = websocket::error::message_too_big;
      break;
    }
    std::string_view data(static_cast<const char*>(buffer.data().data()), buffer.size());
    if (auto decoded = protocol::decode_ws(protocol_, data, ws_.got_binary()))
      endpoint_->from_client(*this, decoded->channel, std::move(decoded->message));
    else
      common::log_warn("kernel={} session={} msg=\"dropped client frame\" error=\"{}\"", endpoint_->log_id(),
                       session_id(), decoded.error().message);
    (void)charge_reading(0);
    if (buffer.capacity() > kReadChunk) buffer = beast::flat_buffer();  // a large message's memory goes back now
  }
  (void)charge_reading(0);
  closed_ = true;
  endpoint_->detach(this, take_unsent());
  charge_user();
  check_drained();
  co_return ec;
}

template <class Stream>
void WsConnection<Stream>::when_drained(size_t level, std::function<void()> fn) {
  drain_level_ = level;
  on_drained_ = std::move(fn);
  if (closed_ || queued_bytes_ <= level) asio::post(ws_.get_executor(), [self = shared()] { self->check_drained(); });
}

template <class Stream>
void WsConnection<Stream>::check_drained() {
  if (!on_drained_ || (!closed_ && queued_bytes_ > drain_level_)) return;
  auto fn = std::move(on_drained_);
  on_drained_ = nullptr;
  fn();
}

template <class Stream>
std::vector<OutgoingPtr> WsConnection<Stream>::take_unsent() {
  std::vector<OutgoingPtr> out;
  // The messages being written may be half written; the client saw a broken frame, so resend them too.
  for (auto& m : queue_) out.push_back(m);
  queue_.clear();
  queued_bytes_ = 0;
  replayed_left_ = 0;
  writing_count_ = 0;
  charge_user();
  return out;
}

template <class Stream>
void WsConnection<Stream>::charge_user() {
  if (!limits_.user_queue) return;
  WsUserQueue& q = *limits_.user_queue;
  q.bytes = q.bytes - std::min(q.bytes, charged_) + queued_bytes_;
  charged_ = queued_bytes_;
}

template <class Stream>
bool WsConnection<Stream>::charge_reading(uint64_t bytes) {
  if (!limits_.user_queue) return true;
  WsUserQueue& q = *limits_.user_queue;
  const uint64_t others = q.reading - std::min(q.reading, read_charged_);
  if (bytes > read_charged_ && q.read_cap > 0 && others + bytes > q.read_cap) return false;
  q.reading = others + bytes;
  read_charged_ = bytes;
  return true;
}

template <class Stream>
WsConnection<Stream>::~WsConnection() {
  if (!limits_.user_queue) return;
  std::erase(limits_.user_queue->members, static_cast<WsUserMember*>(this));
  limits_.user_queue->bytes -= std::min(limits_.user_queue->bytes, charged_);
  limits_.user_queue->reading -= std::min(limits_.user_queue->reading, read_charged_);
}

template <class Stream>
void WsConnection<Stream>::deliver(const OutgoingPtr& m) {
  if (closed_ || closing_) return;
  const auto fragment = m->fragment();
  const bool continues = fragment == protocol::WsFragment::kMiddle || fragment == protocol::WsFragment::kLast;
  if (continues != mid_message_ || (fragment != protocol::WsFragment::kWhole && !takes_fragments())) {
    // A caller's fault: the client would see two messages run into each other.
    common::log_error("kernel={} session={} msg=\"message refused: it would interleave with another\" fragment={} "
                      "mid_message={}", endpoint_->log_id(), session_id(), static_cast<int>(fragment), mid_message_);
    close("internal error: interleaved messages", 1011);
    return;
  }
  mid_message_ = fragment == protocol::WsFragment::kFirst || fragment == protocol::WsFragment::kMiddle;
  queue_.push_back(m);
  queued_bytes_ += m->bytes();
  // Over its own bound with a message waiting behind those being written (one message alone may be larger).
  if (queued_bytes_ > limits_.queue_bytes && queue_.size() > std::max<size_t>(writing_count_, 1)) {
    shed(false, false);
    return;
  }
  charge_user();
  // Over the user's bound: their sockets with the most waiting go, at the end of this turn. Not here:
  // this may be a kernel's broadcast to its sockets, which a close of another of them would change
  // under it; and the turn's messages are all counted by then.
  if (WsUserQueue* user = limits_.user_queue.get(); user && user->cap > 0 && user->bytes > user->cap && !user->shed_posted) {
    user->shed_posted = true;
    asio::post(ws_.get_executor(), [user = limits_.user_queue] {
      user->shed_posted = false;
      shed_over(*user);
    });
  }
  schedule_write();
}

template <class Stream>
uint64_t WsConnection<Stream>::sheddable_bytes() const {
  if (closed_ || closing_) return 0;
  if (writing_) return queued_bytes_;
  uint64_t waiting = 0;
  for (size_t i = std::max(writing_count_, replayed_left_); i < queue_.size(); ++i) waiting += queue_[i]->bytes();
  return waiting;
}

template <class Stream>
void WsConnection<Stream>::shed_for_user() {
  const bool stuck = writing_;
  auto keep = shared();
  shed(true, stuck);
  // Its pending write goes with the connection (what it was writing is in the replay buffer already).
  if (stuck) drop();
}

template <class Stream>
void WsConnection<Stream>::shed(bool for_user, bool with_pending_write) {
  if (closed_ || closing_) return;
  common::log_warn("kernel={} session={} user={} msg=\"client too slow; closing\" queued_bytes={} user_queue_over={} "
                   "dropped={}", endpoint_->log_id(), session_id(), user(), queued_bytes_, for_user, with_pending_write);
  // Keep the messages being written (alive for the write); the rest waits in the replay buffer for a
  // reconnect, and with_pending_write those being written too (the client gets a broken frame of them).
  const auto from = static_cast<std::ptrdiff_t>(with_pending_write ? 0 : writing_count_);
  std::vector<OutgoingPtr> rest(queue_.begin() + from, queue_.end());
  queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(writing_count_), queue_.end());
  replayed_left_ = std::min(replayed_left_, queue_.size());
  queued_bytes_ = 0;
  for (size_t i = replayed_left_; i < queue_.size(); ++i) queued_bytes_ += queue_[i]->bytes();
  charge_user();
  auto keep = shared();
  endpoint_->detach(this, std::move(rest));
  close(for_user ? "the write queue limit of this user's WebSockets together exceeded; reconnect with the same "
                   "session_id to resume"
                 : "write queue limit exceeded; reconnect with the same session_id to resume",
        1008);
}

template <class Stream>
void WsConnection<Stream>::deliver_replayed(const OutgoingPtr& m) {
  if (closed_ || closing_) return;
  CELLGATE_ASSERT(replayed_left_ == queue_.size());  // replayed messages come before any live one
  queue_.push_back(m);
  ++replayed_left_;
  schedule_write();
}

template <class Stream>
void WsConnection<Stream>::close(const std::string& reason, uint16_t code) {
  if (closed_ || closing_) return;
  closing_ = true;
  close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), reason);
  schedule_write();
}

template <class Stream>
void WsConnection<Stream>::schedule_write() {
  if (closed_ || writing_ || write_scheduled_) return;
  write_scheduled_ = true;
  asio::post(ws_.get_executor(), [self = shared()] {
    self->write_scheduled_ = false;
    self->do_write();
  });
}

template <class Stream>
void WsConnection<Stream>::do_write() {
  if (closed_ || writing_) return;
  while (!queue_.empty()) {
    // Beast has sent or received a close frame: no data frame may follow (RFC 6455 5.5.1). The read
    // loop ends next and hands what is queued back to the endpoint.
    if (!ws_.is_open()) return;
    const size_t bytes = build_batch();
    const size_t sent = ws_.next_layer().write_now(FrameBuffers(buffers_.data(), buffers_.data() + buffers_.size()));
    if (sent == bytes) {
      written(headers_.size());
      continue;
    }
    // The socket took part of it (or nothing): the rest goes when it can, and completes the batch.
    beast::buffers_suffix<FrameBuffers> rest(FrameBuffers(buffers_.data(), buffers_.data() + buffers_.size()));
    rest.consume(sent);
    writing_ = true;
    write_began_ = std::chrono::steady_clock::now();
    writing_count_ = headers_.size();
    watch_stall();
    ws_.next_layer().async_write_some(rest, [self = shared()](const boost::system::error_code& ec, size_t) {
      self->writing_ = false;
      self->stall_.cancel();
      if (ec) {
        self->closed_ = true;
        self->check_drained();
        return;
      }
      self->written(std::exchange(self->writing_count_, 0));
      self->do_write();
    });
    return;
  }
  if (buffers_.capacity() > 128) {  // after a burst: an idle connection keeps ~2 KiB, not the burst's
    std::vector<asio::const_buffer>().swap(buffers_);
    std::vector<protocol::WsFrameHeader>().swap(headers_);
  }
  if (!closing_) return;
  writing_ = true;
  ws_.async_close(close_reason_, [self = shared()](const boost::system::error_code&) {
    self->writing_ = false;
    self->closed_ = true;
    self->check_drained();
  });
}

template <class Stream>
void WsConnection<Stream>::watch_stall() {
  stall_.expires_after(kWriteStall);
  stall_.async_wait([self = shared()](const boost::system::error_code& ec) {
    if (ec || !self->writing_ || self->closed_) return;
    common::log_warn("kernel={} session={} msg=\"client read nothing for {} s; closing\" queued_bytes={}",
                     self->endpoint_->log_id(), self->session_id(), kWriteStall.count(), self->queued_bytes_);
    self->drop();
  });
}

template <class Stream>
void WsConnection<Stream>::drop() {
  // No close frame can reach a client that does not read: the socket goes, the pending write and the
  // read loop end, and what was unsent waits in the session's replay buffer for a reconnect.
  boost::system::error_code ignored;
  beast::get_lowest_layer(ws_).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(ws_).cancel();
}

template <class Stream>
size_t WsConnection<Stream>::build_batch() {
  // At most this much per batch, so a buffer list stays short and a slow client's bound
  // (queue_bytes) still counts what waits behind it.
  constexpr size_t kMaxMessages = 64;
  constexpr size_t kMaxBytes = 256 * 1024;
  const size_t count = std::min(queue_.size(), kMaxMessages);
  headers_.clear();
  headers_.reserve(count);  // buffers_ points into headers_: it must not reallocate below
  buffers_.clear();
  size_t bytes = 0;
  while (headers_.size() < count && (headers_.empty() || bytes < kMaxBytes)) {
    const Outgoing& m = *queue_[headers_.size()];
    // These point into the Outgoing, which stays in queue_ until the batch is written.
    const FrameBuffers frame = m.frame_buffers(protocol_);
    const size_t size = asio::buffer_size(frame);
    const auto& header = headers_.emplace_back(m.binary_frame(protocol_), size, m.fragment());
    buffers_.emplace_back(header.data(), header.size());
    buffers_.insert(buffers_.end(), frame.begin(), frame.end());
    bytes += header.size() + size;
  }
  return bytes;
}

template <class Stream>
void WsConnection<Stream>::written(size_t count) {
  for (; count > 0 && !queue_.empty(); --count) {
    if (replayed_left_ > 0)
      --replayed_left_;
    else
      queued_bytes_ -= std::min(queued_bytes_, queue_.front()->bytes());
    queue_.pop_front();
  }
  charge_user();
  if (on_drained_) check_drained();
}

template class WsConnection<PlainStream>;
template class WsConnection<TlsStream>;

}  // namespace cellgate::http
