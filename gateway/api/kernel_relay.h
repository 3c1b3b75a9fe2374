// SPDX-License-Identifier: BSD-3-Clause
// kernel_relay: a client's kernel WebSocket served by relaying it to the node that holds the kernel
// (docs/cluster.md §5). Messages pass both ways as they are; the upstream is always v1, so the relay
// splits frames by their offset table and never parses JSON, and a v1 client is sent the owner's frame
// bytes as they were read, not a copy; a large message is passed on as it arrives, in pieces
// (relayed_messages.h), once its offsets, channel and header are checked, so that receiving it from the
// owner and sending it to the client overlap. Backpressure crosses it: the relay reads from the owner
// only while the client's queue is below half its bound, within a message as between messages. When
// the kernel dies with its node, the relay tells the client as a dead kernel is told (iopub status dead
// with the reason), unless a message is half sent: then only the close says it.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/http/peer_client.h"
#include "gateway/http/relayed_messages.h"
#include "gateway/http/ws_connection.h"

namespace cellgate::api {

// Io thread only. Owned by the client's connection (as its endpoint) and by its own loops.
class KernelRelay final : public http::WsEndpoint, public std::enable_shared_from_this<KernelRelay> {
 public:
  // queue_bytes: the client connection's write bound; the same bounds what waits to go upstream.
  // dead_reason: asked when the upstream ends; the kernel's reason when its row says it is dead, else "".
  KernelRelay(std::unique_ptr<http::PeerWebSocket> upstream, std::string kernel_id, size_t queue_bytes,
              std::function<boost::asio::awaitable<std::string>()> dead_reason);
  void attach(const std::shared_ptr<http::WsSession>& session) override;
  // The owner keeps its replay buffer for the session_id: what this relay had not written to the client
  // is dropped here, and a reconnect (through any node) replays what the owner had not sent.
  void detach(http::WsSession* session, std::vector<http::OutgoingPtr> unsent) override;
  void from_client(http::WsSession& session, const std::string& channel, protocol::Message&& message) override;
  const std::string& log_id() const override { return kernel_id_; }
  // The kernel died with its node (the holder was declared lost: its connection may hang until TCP gives
  // up). The client gets iopub status dead with the reason, then the close.
  void kernel_dead(const std::string& reason);
  bool ended() const { return ended_; }

 private:
  boost::asio::awaitable<void> read_upstream();
  boost::asio::awaitable<void> write_upstream();
  void end(const std::string& why, const std::string& dead_reason = "");

  std::unique_ptr<http::PeerWebSocket> upstream_;
  http::RelayedMessages<http::PeerWebSocket> messages_;  // reads upstream_
  std::string kernel_id_;
  size_t queue_bytes_;
  std::function<boost::asio::awaitable<std::string>()> dead_reason_;
  std::string synth_session_;  // the session of the messages the relay itself sends
  std::weak_ptr<http::WsSession> session_;
  std::deque<std::string> outbox_;  // v1 frames for the owner
  size_t outbox_bytes_ = 0;
  bool writing_ = false;
  bool ended_ = false;
  boost::asio::steady_timer drained_;  // cancelled when the client's queue has drained
};

}  // namespace cellgate::api
