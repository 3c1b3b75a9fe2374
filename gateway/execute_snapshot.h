// SPDX-License-Identifier: BSD-3-Clause
// execute_snapshot: the workspace snapshot after each execute, named in the execute_reply's metadata
// ({"cellgate": {workspace, snapshot, new_snapshot, added, changed, removed}}) and indexed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "events/event_log.h"
#include "metrics/gateway_metrics.h"
#include "protocol/message.h"
#include "workspace/change_watch.h"
#include "workspace/workspace_manager.h"

namespace cellgate::state {
class DatabaseThread;
}

namespace cellgate::gateway {

class KernelHub;
class Offload;
struct SnapshotOrigin;

// Io thread only. The walks run on the offload pool, one at a time (the pool's other thread stays free
// for everyone's file requests). Each workspace has at most one walk running and one waiting: the
// replies that arrive meanwhile join the waiting one, and are delivered in order once it is done. A new
// snapshot's index row is written on the database thread (its own connection), and the replies go out
// once it is written: a listing after the reply has the snapshot, and a database that does not answer
// holds those replies, never the io thread. So each workspace has at most one index job at a time.
class Snapshots {
 public:
  Snapshots(boost::asio::io_context& io, workspace::WorkspaceManager& workspaces, state::DatabaseThread& db_thread,
            Offload& offload, metrics::GatewayMetrics* metrics = nullptr, events::EventLog* events = nullptr);
  // KernelHub's execute-reply hook: snapshots the kernel's workspace if anything changed (most cells
  // write no file: inotify says so, and the walk is skipped), then calls deliver with the reply and the
  // snapshot ("" when it failed).
  void after_execute(const std::shared_ptr<KernelHub>& hub, protocol::Message reply,
                     std::function<void(protocol::Message, std::string)> deliver);
  // The snapshot a kernel's journal starts from: labelled (snapshot retention keeps it; the journal's
  // retention deletes it), in the kernel's order of snapshots. done runs on the io thread with its id,
  // or "" and why it could not be taken.
  void baseline(const std::shared_ptr<KernelHub>& hub, std::function<void(std::string, std::string, uint64_t)> done);
  // No kernel uses the workspace any more: stop watching it (inotify watches are a host-wide budget).
  void forget(const workspace::WorkspaceRef& ref);

 private:
  struct Waiter {
    std::string kernel_id;
    protocol::Message reply;
    std::function<void(protocol::Message, std::string)> deliver;
  };
  struct WorkspaceWalks {
    bool running = false;
    workspace::WorkspaceConfig config;
    std::vector<Waiter> next;  // the replies the next walk answers
  };
  // Starts the walk for what waits on ref's workspace (none may be running).
  void start_walk(const workspace::WorkspaceRef& ref);
  // Io thread: indexes what a walk took on the database thread, then runs then (on the io thread, also
  // when the row could not be written: the next start's reconcile writes it from the store).
  void index_then(const workspace::WorkspaceRef& ref, workspace::SnapshotResult taken, workspace::SnapshotOptions options,
                  SnapshotOrigin origin, std::function<void()> then);
  // Io thread: delivers a finished walk's replies, and starts the next walk of the workspace if any waits.
  void walk_done(const workspace::WorkspaceRef& ref, std::vector<Waiter>& batch, const std::string& snapshot_id);

  boost::asio::io_context& io_;
  workspace::WorkspaceManager& workspaces_;
  state::DatabaseThread& db_thread_;
  Offload& offload_;
  metrics::GatewayMetrics* metrics_;  // walks' durations (null: not counted)
  events::EventLog* events_;          // a snapshot that was taken (null: not told)
  // Workspaces no execute has touched since their last walk are not walked again (see change_watch.h).
  workspace::ChangeWatch change_watch_;
  std::map<std::string, WorkspaceWalks> walks_;  // owner/name → its walks; no entry while none waits
  boost::asio::strand<boost::asio::thread_pool::executor_type> walk_strand_;
};

}  // namespace cellgate::gateway
