// SPDX-License-Identifier: BSD-3-Clause
// ws_connection: one client's kernel channels WebSocket (/api/kernels/{id}/channels): reads its frames
// into the endpoint it serves, writes that endpoint's messages from a bounded queue.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/websocket.hpp>

#include "gateway/http/coalescing_stream.h"
#include "gateway/http/outgoing.h"
#include "gateway/http/tls.h"
#include "gateway/http/types.h"
#include "protocol/ws_codec.h"
#include "protocol/ws_frame.h"

namespace cellgate::http {

// What all of one user's connections hold together, and the most they may (0 = no bound): what they
// have queued to send (cap, bytes), and what the client messages they are reading will hold when read
// whole (read_cap, reading). A user's many sockets are charged to that user. Shared by those
// connections; io thread only.
class WsUserMember;
struct WsUserQueue {
  uint64_t cap = 0;
  uint64_t bytes = 0;
  uint64_t read_cap = 0;
  uint64_t reading = 0;
  std::vector<WsUserMember*> members;  // the user's connections (each adds and removes itself)
  bool shed_posted = false;            // a shed_over() of this user is due at the end of this turn
};

// A connection as its user's queue budget sees it.
class WsUserMember {
 public:
  virtual ~WsUserMember() = default;
  // What shedding it gives back: the live bytes it holds when a write of its is pending (all of them go),
  // else those waiting to be written; 0 once it is closing.
  virtual uint64_t sheddable_bytes() const = 0;
  // When the write it has pending last made progress (began, or the socket took some of it);
  // time_point::max() when it has none pending.
  virtual std::chrono::steady_clock::time_point stuck_since() const = 0;
  // Closes it with 1008, what it had not sent back in its session's replay buffer; one whose write is
  // pending is dropped at once, as the write stall would drop it (no close frame reaches a client that
  // reads nothing), and what it was writing goes back too.
  virtual void shed_for_user() = 0;
};

// While the user is over cap: sheds the user's connections, the one whose write has been stuck longest
// first (then the one that gives back most), until within it. A socket that reads is not the one closed
// for those that stopped. Io thread only.
void shed_over(WsUserQueue& user);

struct WsLimits {
  uint64_t max_message_bytes;
  uint64_t queue_bytes;  // per connection
  int ping_interval_s;
  std::shared_ptr<WsUserQueue> user_queue;  // null: no per-user bound
};

// One client connection as its endpoint sees it, whatever stream it runs over. Io thread only.
class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  explicit WsSession(std::string session_id) : session_id_(std::move(session_id)) {}
  virtual ~WsSession() = default;
  // Queues a message, or a piece of one (Outgoing::fragment()) when takes_fragments(): once a message's
  // first piece is queued, only its next pieces are, up to its last (a WebSocket cannot interleave two
  // messages); anything else is refused and the connection closed with 1011. Never blocks.
  virtual void deliver(const OutgoingPtr& m) = 0;
  // Whether pieces of a message may be delivered: sent as the frames of a fragmented message (RFC 6455
  // 5.4) to a v1 client, whose framing is the message's bytes as they arrive.
  virtual bool takes_fragments() const = 0;
  // A message's first piece has been delivered and its last not yet.
  virtual bool mid_message() const = 0;
  // Queues a message of this session's replay buffer (right after attach, before any live message). It
  // does not count against the write-queue bound: the replay buffer bounds it already, and counted, a
  // replay larger than the bound would close every reconnect at once.
  virtual void deliver_replayed(const OutgoingPtr& m) = 0;
  // Sends a close frame after what is queued (code 1000 unless given).
  virtual void close(const std::string& reason, uint16_t code = 1000) = 0;
  // Bytes of live messages waiting to be written. A relay of another node's kernel (gateway/cluster)
  // reads on only while this is small, so that a slow client's backpressure reaches that node.
  virtual size_t pending_bytes() const = 0;
  // Calls fn once, on the io thread, when pending_bytes() is at most level or the connection has
  // ended (posted at once if either is so already). A later call replaces an earlier call's fn.
  virtual void when_drained(size_t level, std::function<void()> fn) = 0;
  const std::string& session_id() const { return session_id_; }
  // Who opened the connection, as the handler authenticated them, and the client it said it is.
  void identify(std::string user, std::string client) {
    user_ = std::move(user);
    client_ = std::move(client);
  }
  const std::string& user() const { return user_; }
  const std::string& client() const { return client_; }

 private:
  std::string session_id_;
  std::string user_, client_;
};

// What a WebSocket connection serves (a kernel's fan-out, KernelHub). Io thread only.
class WsEndpoint {
 public:
  virtual ~WsEndpoint() = default;
  // The handshake is done: messages for the session may be delivered from now on.
  virtual void attach(const std::shared_ptr<WsSession>& session) = 0;
  // The connection ended (or was closed as too slow); unsent: what it had not written, in order.
  virtual void detach(WsSession* session, std::vector<OutgoingPtr> unsent) = 0;
  // A message from the client, decoded (channel "shell", "control" or "stdin"; others are dropped).
  virtual void from_client(WsSession& session, const std::string& channel, protocol::Message&& message) = 0;
  // Names the endpoint in log lines (the kernel id).
  virtual const std::string& log_id() const = 0;
};

// Io thread only. Reads client frames into the endpoint; writes its messages from a bounded queue. What the
// endpoint delivers in one turn of the io loop leaves together at its end: the frames (built here, RFC 6455
// 5.2) go to the socket in one sendmsg when it takes them, with no Beast write operation per message;
// Beast still reads, and writes the control frames (coalescing_stream.h keeps the two writers' frames
// whole and in order).
// Read policy: a client message is read a chunk at a time, and as soon as a frame's header says how long
// it is, its whole length is charged to the user (read_cap): a message that does not fit closes the
// connection with 1009 before its bytes are read. A large message's buffer is freed once it is handed on.
// Slow-client policy: when more than queue_bytes are waiting, the connection is closed with 1008
// and what it had not been sent goes back to the endpoint (the session's replay buffer), so a reconnect with the same
// session_id gets it: memory stays bounded and nothing is dropped silently. When the user's connections
// together are over their bound, those of them stuck longest with messages waiting are closed the same
// way, at the end of that turn of the io loop (shed_over): a user's stalled sockets give their budget back
// at once, rather than at the write stall, and a socket of theirs that reads is not the one closed.
// A message may come in pieces (a relay passes a large one on as it arrives): each is one frame of a
// fragmented message, counted in the queue as it is delivered; Beast's control frames, and a close, may go
// between them, another message may not (deliver refuses it). A close before the last piece ends the
// connection with that message unfinished, which the client discards (RFC 6455 5.4, 7.1.1).
// Stream is PlainStream or TlsStream (both instantiated in ws_connection.cc).
template <class Stream>
class WsConnection final : public WsSession, public WsUserMember {
 public:
  // Under Beast, CoalescingStream orders our data frames and Beast's control frames (coalescing_stream.h).
  using Ws = boost::beast::websocket::stream<CoalescingStream<Stream>>;

  WsConnection(Ws ws, std::shared_ptr<WsEndpoint> endpoint, std::string session_id, protocol::WsProtocol protocol,
               WsLimits limits);
  ~WsConnection() override;

  // Completes the handshake for req and serves until the connection ends. Returns what ended the
  // read loop (websocket::error::message_too_big: Beast closed it with 1009), or nothing.
  boost::asio::awaitable<boost::system::error_code> run(Request req);
  void deliver(const OutgoingPtr& m) override;
  bool takes_fragments() const override { return protocol_ == protocol::WsProtocol::kV1; }
  bool mid_message() const override { return mid_message_; }
  void deliver_replayed(const OutgoingPtr& m) override;
  void close(const std::string& reason, uint16_t code = 1000) override;
  size_t pending_bytes() const override { return queued_bytes_; }
  void when_drained(size_t level, std::function<void()> fn) override;
  uint64_t sheddable_bytes() const override;
  std::chrono::steady_clock::time_point stuck_since() const override {
    return writing_ ? write_began_ : std::chrono::steady_clock::time_point::max();
  }
  void shed_for_user() override;

 private:
  // Closes it with 1008 as too slow for its own bound (for_user: for its user's), what waits behind the
  // write in flight handed back to the endpoint (the session's replay buffer), with_pending_write what
  // that write holds too.
  void shed(bool for_user, bool with_pending_write);
  void check_drained();
  void charge_user();  // the user's queue holds what this one's queue holds now
  // The message this connection is reading will hold `bytes`: false, with nothing charged, when that
  // would take the user's messages being read past read_cap (never for a smaller charge).
  bool charge_reading(uint64_t bytes);
  void schedule_write();  // at the end of this turn of the io loop: one write for all it delivered
  void do_write();
  void watch_stall();         // a write pending kWriteStall without progress drops the client
  void drop();                // ends the connection now: the pending write and the read loop end
  size_t build_batch();       // frames for the front of queue_ into buffers_; returns their bytes
  void written(size_t count);  // the first count messages of queue_ are on their way
  std::vector<OutgoingPtr> take_unsent();
  std::shared_ptr<WsConnection> shared() { return std::static_pointer_cast<WsConnection>(shared_from_this()); }

  Ws ws_;
  std::shared_ptr<WsEndpoint> endpoint_;
  protocol::WsProtocol protocol_;
  WsLimits limits_;
  std::deque<OutgoingPtr> queue_;
  size_t queued_bytes_ = 0;   // of the live messages in queue_
  size_t replayed_left_ = 0;  // the first replayed_left_ messages of queue_ are replayed ones
  size_t writing_count_ = 0;  // the first writing_count_ messages of queue_ are being written
  std::vector<protocol::WsFrameHeader> headers_;  // of the write in flight; the buffers point into them
  std::vector<boost::asio::const_buffer> buffers_;
  bool writing_ = false;
  std::chrono::steady_clock::time_point write_began_;  // of the pending write (writing_)
  bool write_scheduled_ = false;
  bool closing_ = false;
  bool closed_ = false;
  bool mid_message_ = false;  // the last piece delivered was a first or middle one
  boost::beast::websocket::close_reason close_reason_;
  size_t drain_level_ = 0;
  uint64_t charged_ = 0;       // what this connection counts in limits_.user_queue->bytes
  uint64_t read_charged_ = 0;  // and in limits_.user_queue->reading
  std::function<void()> on_drained_;
  boost::asio::steady_timer stall_;  // the pending write's deadline (watch_stall)
};

}  // namespace cellgate::http
