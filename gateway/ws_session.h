// SPDX-License-Identifier: BSD-3-Clause
// ws_session: one client's kernel channels WebSocket (/api/kernels/{id}/channels).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/websocket.hpp>

#include "gateway/coalescing_stream.h"
#include "gateway/http_types.h"
#include "gateway/outgoing.h"
#include "gateway/tls.h"
#include "protocol/ws_codec.h"
#include "protocol/ws_frame.h"

namespace cellgate::gateway {

class KernelHub;

struct WsLimits {
  uint64_t max_message_bytes;
  uint64_t queue_bytes;
  int ping_interval_s;
};

// One client connection as the hub sees it, whatever stream it runs over. Io thread only.
class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  explicit WsSession(std::string session_id) : session_id_(std::move(session_id)) {}
  virtual ~WsSession() = default;
  // Queues a message. Never blocks.
  virtual void deliver(const OutgoingPtr& m) = 0;
  // Queues a message of this session's replay buffer (right after attach, before any live message). It
  // does not count against the write-queue bound: the replay buffer bounds it already, and counted, a
  // replay larger than the bound would close every reconnect at once.
  virtual void deliver_replayed(const OutgoingPtr& m) = 0;
  // Sends a close frame after what is queued (code 1000 unless given).
  virtual void close(const std::string& reason, uint16_t code = 1000) = 0;
  const std::string& session_id() const { return session_id_; }

 private:
  std::string session_id_;
};

// Io thread only. Reads client frames into the hub; writes hub messages from a bounded queue. What the
// hub delivers in one turn of the io loop leaves together at its end: the frames (built here, RFC 6455
// 5.2) go to the socket in one sendmsg when it takes them, with no Beast write operation per message;
// Beast still reads, and writes the control frames (coalescing_stream.h keeps the two writers' frames
// whole and in order).
// Slow-client policy: when more than queue_bytes are waiting, the connection is closed with 1008
// and what it had not been sent goes to its session's replay buffer, so a reconnect with the same
// session_id gets it: memory stays bounded and nothing is dropped silently.
// Stream is PlainStream or TlsStream (both instantiated in ws_session.cc).
template <class Stream>
class WsConnection final : public WsSession {
 public:
  // Under Beast, CoalescingStream orders our data frames and Beast's control frames (coalescing_stream.h).
  using Ws = boost::beast::websocket::stream<CoalescingStream<Stream>>;

  WsConnection(Ws ws, std::shared_ptr<KernelHub> hub, std::string session_id, protocol::WsProtocol protocol,
               WsLimits limits);

  // Completes the handshake for req and serves until the connection ends.
  boost::asio::awaitable<void> run(Request req);
  void deliver(const OutgoingPtr& m) override;
  void deliver_replayed(const OutgoingPtr& m) override;
  void close(const std::string& reason, uint16_t code = 1000) override;

 private:
  void schedule_write();  // at the end of this turn of the io loop: one write for all it delivered
  void do_write();
  size_t build_batch();       // frames for the front of queue_ into buffers_; returns their bytes
  void written(size_t count);  // the first count messages of queue_ are on their way
  std::vector<OutgoingPtr> take_unsent();
  std::shared_ptr<WsConnection> shared() { return std::static_pointer_cast<WsConnection>(shared_from_this()); }

  Ws ws_;
  std::shared_ptr<KernelHub> hub_;
  protocol::WsProtocol protocol_;
  WsLimits limits_;
  std::deque<OutgoingPtr> queue_;
  size_t queued_bytes_ = 0;   // of the live messages in queue_
  size_t replayed_left_ = 0;  // the first replayed_left_ messages of queue_ are replayed ones
  size_t writing_count_ = 0;  // the first writing_count_ messages of queue_ are being written
  std::vector<protocol::WsFrameHeader> headers_;  // of the write in flight; the buffers point into them
  std::vector<boost::asio::const_buffer> buffers_;
  bool writing_ = false;
  bool write_scheduled_ = false;
  bool closing_ = false;
  bool closed_ = false;
  boost::beast::websocket::close_reason close_reason_;
};

}  // namespace cellgate::gateway
