// SPDX-License-Identifier: BSD-3-Clause
// kernel_hub: fans one kernel's messages out to its WebSocket clients and routes replies back.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gateway/outgoing.h"
#include "kernel-launcher/kernel.h"

namespace cellgate::gateway {

class WsSession;

// Io thread only. iopub goes to every connection; shell, control and stdin replies go to the connection
// whose request they answer (by parent msg_id). A session_id whose last connection went away gets a
// bounded replay buffer, replayed when a connection with the same session_id comes back.
class KernelHub : public launcher::KernelObserver, public std::enable_shared_from_this<KernelHub> {
 public:
  KernelHub(std::shared_ptr<launcher::Kernel> kernel, size_t replay_bytes);

  launcher::Kernel& kernel() { return *kernel_; }
  const std::shared_ptr<launcher::Kernel>& kernel_ptr() const { return kernel_; }
  int connections() const { return static_cast<int>(sessions_.size()); }

  // A new connection; an older one with the same session_id is closed (it is stale). Replays the buffer.
  void attach(const std::shared_ptr<WsSession>& session);
  // The connection ended; unsent messages, if any, go to its session's replay buffer.
  void detach(WsSession* session, std::vector<OutgoingPtr> unsent);
  // A message from a client, already decoded.
  void from_client(WsSession& session, const std::string& channel, protocol::Message&& message);
  // Kernel deleted: close every connection with this reason and drop the buffers.
  void close_all(const std::string& reason);

  void on_kernel_message(launcher::Channel channel, const protocol::Message& message) override;
  void on_kernel_state(launcher::KernelState state, const std::string& reason) override;

 private:
  struct Replay {
    std::deque<OutgoingPtr> messages;
    size_t bytes = 0;
    size_t dropped = 0;
  };
  void deliver_to_session(const std::string& session_id, const OutgoingPtr& m);
  void buffer(Replay& r, const OutgoingPtr& m);
  void broadcast(const OutgoingPtr& m);
  void remember_request(const std::string& msg_id, const std::string& session_id);

  std::shared_ptr<launcher::Kernel> kernel_;
  size_t replay_bytes_;
  std::vector<std::shared_ptr<WsSession>> sessions_;
  std::map<std::string, Replay> offline_;                    // session_id → buffered messages
  std::deque<std::string> offline_order_;                    // oldest first, for eviction
  std::unordered_map<std::string, std::string> requests_;    // msg_id → session_id
  std::deque<std::string> request_order_;
  std::string synth_session_;
};

}  // namespace cellgate::gateway
