// SPDX-License-Identifier: BSD-3-Clause
// kernel_hub: fans one kernel's messages out to its WebSocket clients and routes replies back.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <optional>

#include "metrics/gateway_metrics.h"
#include "gateway/execute_clock.h"
#include "gateway/turn_lock.h"
#include "gateway/http/outgoing.h"
#include "gateway/http/ws_connection.h"
#include "gateway/lease_fence.h"
#include "journal/entry.h"
#include "kernel-launcher/kernel.h"
#include "workspace/workspace.h"

namespace cellgate::journal {
class KernelJournal;
}

namespace cellgate::gateway {

using http::OutgoingPtr;
using http::WsSession;

// What clients are told on iopub when a kernel is restarting or dead for a reason (as jupyter_server's
// auto-restarter says it): a status message, and for a reason other than "shutdown" an error naming it.
// A relay of another node's kernel says the same when that node is lost (api/kernel_relay.h).
std::vector<OutgoingPtr> kernel_state_notice(const std::string& session, const char* execution_state,
                                             const std::string& reason);

// A gateway-internal client of the kernel (the agent API): sees the kernel's messages whose parent is
// the request it sent, and the kernel's state changes. Io thread only.
class RequestWatcher {
 public:
  virtual ~RequestWatcher() = default;
  virtual void on_reply(launcher::Channel channel, const protocol::Message& message, const std::string& msg_type) = 0;
  virtual void on_state(launcher::KernelState state, const std::string& reason) = 0;
};

// How the gateway sends a request of its own (KernelHub::send_watched).
struct Watch {
  bool now = false;     // bypass the hold of a starting kernel (seed notebooks run while it is still starting)
  bool hidden = false;  // the gateway's own cell: its iopub goes to the watcher alone (clients see no trace
                        // of it), its execute_reply takes no snapshot, and the journal marks it silent
  journal::Origin origin{"", journal::client::kGateway, ""};  // who the journal says sent it
};

// Io thread only. iopub goes to every connection; shell, control and stdin replies go to the connection
// whose request they answer (by parent msg_id). A session_id whose last connection went away gets a
// bounded replay buffer, replayed when a connection with the same session_id comes back.
class KernelHub : public launcher::KernelObserver,
                  public http::WsEndpoint,
                  public std::enable_shared_from_this<KernelHub> {
 public:
  KernelHub(std::shared_ptr<launcher::Kernel> kernel, size_t replay_bytes);

  // Who owns the kernel, and the workspace its jail mounts at /workspace.
  std::string owner;
  std::string workspace;
  bool ephemeral = false;   // the workspace is deleted with the kernel
  // Its network policy, canonical (egress/policy.h policy_json); mode none unless it has one.
  nlohmann::json network = {{"mode", "none"}};
  bool has_network() const { return network.value("mode", "none") != "none"; }
  // Its jail has a proxy endpoint (it started with a network policy): the proxy knows it even while
  // its policy is none, and only such a kernel's policy can be changed while it runs.
  bool egress_endpoint = false;
  // Held by whoever changes what the egress proxy holds for this kernel (a PATCH, the resync after the
  // proxy restarted) from reading `network` to recording the proxy's answer. Each request goes on a
  // connection of its own, so two in flight could be applied by the proxy in one order and recorded
  // here in the other: the proxy would enforce a policy the gateway no longer shows.
  TurnLock network_turn;
  int pause_after_s = 0;    // freeze the kernel after this long idle; 0 = never
  // A request was sent on shell or control and the kernel has sent nothing since: it has not even
  // said busy yet (a loaded host, a kernel just thawed), so it is not idle and must not be frozen
  // with the request in its socket (nothing would thaw it).
  bool awaiting_kernel() const { return awaiting_kernel_; }
  int requests_in_flight = 0;  // REST execute/tool calls running: never paused meanwhile (a tool's
                               // process runs in the jail's cgroup, unseen by the kernel's state)
  std::optional<workspace::WorkspaceConfig> workspace_config;  // the owner's caps
  // In a cluster: this node's lease. A client's message while it does not hold is not sent to the
  // kernel: the client is disconnected with 1001, going away (websocket-client refuses 1012, which
  // RFC 6455 leaves unassigned), and reconnects through a node that may act.
  std::shared_ptr<const LeaseFence> fence;
  // Tells every client (iopub stderr stream) something about the kernel, e.g. why it is going away.
  void notify_clients(const std::string& text) { notify_stderr("[cellgate] " + text + "\n", "{}"); }
  // Runs on the reply to each execute the gateway sent, before anyone sees it; calls deliver (on the
  // io thread) with the reply, possibly with metadata added, and the workspace snapshot it names.
  // Replies are delivered in order.
  using Deliver = std::function<void(protocol::Message reply, std::string snapshot)>;
  using ReplyHook = std::function<void(protocol::Message reply, Deliver deliver)>;
  void set_execute_reply_hook(ReplyHook hook) { reply_hook_ = std::move(hook); }
  // Where iopub traffic is counted (null: nowhere); set once, before the kernel starts.
  void set_metrics(metrics::GatewayMetrics* metrics) { metrics_ = metrics; }
  // What an operator hears of: the kernel paused or resumed (by anyone), restarted on its own, or died.
  enum class Lifecycle { kPaused, kResumed, kAutoRestart, kDied };
  using LifecycleHook = std::function<void(Lifecycle what, const std::string& reason)>;
  void set_lifecycle_hook(LifecycleHook hook) { lifecycle_hook_ = std::move(hook); }

  // The kernel's execution journal (null: none). Every execute_request sent to the kernel, by a client
  // or by the gateway, is recorded once, here.
  void set_journal(std::shared_ptr<journal::KernelJournal> journal) { journal_ = std::move(journal); }
  const std::shared_ptr<journal::KernelJournal>& journal() const { return journal_; }
  // Takes the snapshot a journal's first entry starts from, then calls done on the io thread with its
  // id, or "" and why there is none. Set by the kernel manager; null: the workspace is not snapshotted.
  // done: the snapshot ("" with a note when none was taken) and the bytes it holds.
  using BaselineTaker =
      std::function<void(std::function<void(std::string snapshot, std::string note, uint64_t bytes)> done)>;
  void set_baseline_taker(BaselineTaker taker) { take_baseline_ = std::move(taker); }

  launcher::Kernel& kernel() { return *kernel_; }
  // A wall-clock limit per execution (0 = off): past it the cell is interrupted, and if the interrupt
  // does not take within a grace period the kernel is restarted. Clients are told on iopub.
  void set_execute_limit(std::chrono::seconds limit) { execute_limit_ = limit; }
  std::chrono::seconds execute_limit() const { return execute_limit_; }
  const std::shared_ptr<launcher::Kernel>& kernel_ptr() const { return kernel_; }
  int connections() const { return static_cast<int>(sessions_.size()); }

  // A new connection; an older one with the same session_id is closed (it is stale). Replays the buffer.
  void attach(const std::shared_ptr<WsSession>& session) override;
  // The connection ended; unsent messages, if any, go to its session's replay buffer.
  void detach(WsSession* session, std::vector<OutgoingPtr> unsent) override;
  // A message from a client, already decoded.
  void from_client(WsSession& session, const std::string& channel, protocol::Message&& message) override;
  const std::string& log_id() const override { return kernel_->id(); }
  // Sends a gateway-originated request; messages whose parent is its msg_id go to watcher until unwatch().
  // origin in how: who the journal says sent it.
  bool send_watched(launcher::Channel channel, const protocol::Message& message, const std::string& msg_id,
                    std::shared_ptr<RequestWatcher> watcher, Watch how = {});
  void unwatch(const std::string& msg_id);
  // Kernel deleted: close every connection with this reason and drop the buffers.
  void close_all(const std::string& reason);

  void on_kernel_message(launcher::Channel channel, protocol::Message&& message) override;
  void on_kernel_state(launcher::KernelState state, const std::string& reason) override;
  void on_kernel_paused(bool paused) override;

 private:
  struct Replay {
    std::deque<OutgoingPtr> messages;
    size_t bytes = 0;
    size_t dropped = 0;
  };
  // A shell message held while the journal's baseline snapshot is taken.
  struct Held {
    launcher::Channel channel;
    protocol::Message message;
    std::string msg_type, msg_id;
    journal::Origin origin;
    bool now;
    bool hidden;
  };
  // Sends a shell or control message on, through the journal; false when the kernel would not take it.
  bool forward(launcher::Channel channel, const protocol::Message& message, const std::string& msg_type,
               const std::string& msg_id, const journal::Origin& origin, bool now, bool hidden = false);
  // The journal's first execute waits for a snapshot of the workspace: shell messages queue meanwhile.
  bool must_hold(launcher::Channel channel, const std::string& msg_type) const;
  void hold(Held held);
  void release_held();
  void deliver_to_session(const std::string& session_id, const OutgoingPtr& m);
  void buffer(Replay& r, const OutgoingPtr& m);
  void broadcast(const OutgoingPtr& m);
  void dispatch(launcher::Channel channel, protocol::Message message, std::string parent_id,
                const std::string* snapshot = nullptr);
  void remember_request(const std::string& msg_id, const std::string& session_id);
  void note_silent(const protocol::HeaderFields& header, const protocol::Message& message);
  void note_execute(const protocol::HeaderFields& header);  // an execute_request the gateway sends on shell
  void note_request_sent(const protocol::HeaderFields& header);  // sets awaiting_kernel_
  void on_execute_started(const std::string& msg_id);
  void arm_clocks();  // arms the timers of executions the clock started, disarms those that ended
  void track_execution(launcher::Channel channel, const protocol::Message& message, bool is_execute_reply,
                       std::string& parent_id);
  void notify_stderr(const std::string& text, const std::string& parent_header);
  static boost::asio::awaitable<void> enforce_limit(std::shared_ptr<KernelHub> self, std::string msg_id,
                                                   std::string parent_header);

  std::shared_ptr<launcher::Kernel> kernel_;
  size_t replay_bytes_;
  std::vector<std::shared_ptr<WsSession>> sessions_;
  std::map<std::string, Replay> offline_;                    // session_id → buffered messages
  std::deque<std::string> offline_order_;                    // oldest first, for eviction
  std::unordered_map<std::string, std::string> requests_;    // msg_id → session_id
  std::deque<std::string> request_order_;
  std::string synth_session_;
  std::unordered_map<std::string, std::weak_ptr<RequestWatcher>> watchers_;  // msg_id → internal client
  std::unordered_set<std::string> hidden_;  // watched msg_ids whose iopub only the watcher sees
  std::chrono::seconds execute_limit_{0};
  ReplyHook reply_hook_;
  LifecycleHook lifecycle_hook_;
  // execute_request msg_id → when it went to the kernel, until its reply: the execute-latency
  // histogram (queueing in the kernel included, as a client sees it).
  static constexpr size_t kMaxTimedExecutes = 1024;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> execute_sent_;
  void note_execute_sent(const std::string& msg_id);
  metrics::GatewayMetrics* metrics_ = nullptr;
  bool awaiting_kernel_ = false;
  ExecuteClock clock_;  // which execution the limit times, by the gateway's count (only with a limit)
  std::unordered_map<std::string, std::string> limited_;  // execute msg_id → its header, until it ends
  std::unordered_set<std::string> silent_;                 // silent execute msg_ids, until the reply
  // Executes the gateway sent (a client's, or its own), until the reply: only a reply to one of these
  // triggers the after-execute snapshot, so a kernel cannot make the gateway walk its workspace at will.
  std::unordered_set<std::string> sent_executes_;
  std::unordered_map<std::string, std::shared_ptr<boost::asio::steady_timer>> limit_timers_;
  std::shared_ptr<journal::KernelJournal> journal_;
  BaselineTaker take_baseline_;
  std::deque<Held> held_;
  bool baseline_running_ = false;
};

}  // namespace cellgate::gateway
