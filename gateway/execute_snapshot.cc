// SPDX-License-Identifier: BSD-3-Clause
// execute_snapshot: the workspace snapshot after each execute, named in the execute_reply's metadata.
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "gateway/execute_snapshot.h"

#include "common/log.h"
#include "gateway/kernel_hub.h"
#include "gateway/offload.h"
#include "gateway/snapshot_index.h"
#include "state/database_thread.h"
#include "protocol/json_scan.h"
#include "protocol/json_text.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// The execute_reply's metadata.cellgate: which snapshot the workspace was saved as after this execute.
void attach_snapshot_info(protocol::Message& reply, json info) {
  auto md = protocol::parse_untrusted_json(reply.metadata);
  if (!md.is_object()) md = json::object();
  md["cellgate"] = std::move(info);
  reply.metadata = md.dump(-1, ' ', false, json::error_handler_t::replace);
}

json snapshot_info(const std::string& workspace, const workspace::SnapshotResult& snap) {
  return {{"workspace", workspace},
          {"snapshot", snap.id},
          {"new_snapshot", snap.created},
          {"added", snap.diff.added},
          {"changed", snap.diff.changed},
          {"removed", snap.diff.removed}};
}

// snapshot_info's text for an execute that changed no file, written directly: it is most executes.
std::string unchanged_snapshot_text(const std::string& workspace, const std::string& head) {
  std::string out = "{\"workspace\":";
  protocol::detail::append_json_string(out, workspace);
  out += ",\"snapshot\":";
  protocol::detail::append_json_string(out, head);
  out += ",\"new_snapshot\":false,\"added\":[],\"changed\":[],\"removed\":[]}";
  return out;
}

// attach_snapshot_info without parsing and re-dumping the kernel's metadata (once per execute): info is
// spliced into its text. False when the metadata is not a plain object without a "cellgate" member.
bool splice_snapshot_info(protocol::Message& reply, const std::string& info_text) {
  protocol::detail::ScanField fields[] = {{"cellgate"}};
  if (!protocol::detail::scan_top_level(reply.metadata, fields) ||
      fields[0].kind != protocol::detail::ScanField::Kind::kMissing)
    return false;
  std::string member = "\"cellgate\":" + info_text;
  size_t open = reply.metadata.find('{');  // scan_top_level: an object, perhaps after whitespace
  size_t next = reply.metadata.find_first_not_of(" \t\r\n", open + 1);
  if (next == std::string::npos) return false;
  if (reply.metadata[next] != '}') member += ',';
  reply.metadata.insert(open + 1, member);
  return true;
}

}  // namespace

Snapshots::Snapshots(asio::io_context& io, workspace::WorkspaceManager& workspaces, state::DatabaseThread& db_thread,
                     Offload& offload, metrics::GatewayMetrics* metrics, events::EventLog* events)
    : io_(io), workspaces_(workspaces), db_thread_(db_thread), offload_(offload), metrics_(metrics), events_(events),
      walk_strand_(offload.executor()) {}

void Snapshots::forget(const workspace::WorkspaceRef& ref) {
  if (auto ws = workspaces_.open(ref)) change_watch_.forget(ws->tree_path());
}

void Snapshots::after_execute(const std::shared_ptr<KernelHub>& hub, protocol::Message reply,
                              std::function<void(protocol::Message, std::string)> deliver) {
  workspace::WorkspaceRef ref{hub->owner, hub->workspace};
  const std::string key = ref.owner + "/" + ref.name;
  // Most executes write no file: when inotify saw nothing since the last walk, the head snapshot is
  // still the tree, and the reply goes out without a walk or a trip through the thread pool. The head
  // id is read again only after inotify saw the workspace directory change (a snapshot or restore
  // replaced the head file, in this process or another; the workspace was removed). Not while a walk
  // of the workspace runs or waits: this reply must not overtake the replies it answers.
  std::optional<std::string> head;
  auto tree = workspaces_.tree_path(ref);
  if (tree && !walks_.count(key) && !change_watch_.maybe_changed(*tree, head)) {
    if (!head) {
      const uint64_t token = change_watch_.watch_head(*tree);
      if (auto ws = workspaces_.open(ref)) {
        head = ws->head_id();
        change_watch_.remember_head(*tree, token, *head);
      }
    }
  }
  if (head) {
    // What a walk would find: the head ("" while the tree was never saved), nothing added or changed.
    auto text = unchanged_snapshot_text(ref.name, *head);
    if (!splice_snapshot_info(reply, text)) attach_snapshot_info(reply, json::parse(text));
    deliver(std::move(reply), *head);  // now, not posted: a turn of the io loop costs more than this whole path
    return;
  }
  auto& walks = walks_[key];
  walks.config = workspaces_.config();
  if (auto cfg = hub->workspace_config) walks.config = *cfg;
  walks.next.push_back(Waiter{hub->kernel().id(), std::move(reply), std::move(deliver)});
  if (!walks.running) start_walk(ref);
}

void Snapshots::start_walk(const workspace::WorkspaceRef& ref) {
  const std::string key = ref.owner + "/" + ref.name;
  auto& walks = walks_[key];
  walks.running = true;
  auto batch = std::make_shared<std::vector<Waiter>>(std::move(walks.next));
  walks.next.clear();
  asio::post(walk_strand_, [this, ref, config = walks.config, batch]() mutable {
    json info;
    workspace::SnapshotResult taken;
    const std::string& id = batch->front().kernel_id;
    auto ws = workspaces_.open(ref);
    if (!ws) {
      info = {{"error", ws.error().message}};
    } else {
      change_watch_.begin_walk(ws->tree_path());
      workspace::Workspace w(workspaces_.store(), ws->dir(), config);
      const auto began = std::chrono::steady_clock::now();
      auto snap = w.snapshot({});
      if (snap && metrics_) metrics_->snapshot_taken(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
      if (!snap) {
        change_watch_.invalidate(ws->tree_path());
        info = {{"error", "snapshot failed: " + snap.error().message}};
        common::log_warn("kernel={} msg=\"snapshot after execute failed\" error=\"{}\"", id, snap.error().message);
      } else {
        taken = snap.value();
        info = snapshot_info(ref.name, taken);
      }
      change_watch_.end_walk(ws->tree_path());
    }
    // The snapshot is the first reply's; the later ones in the batch see the same tree.
    SnapshotOrigin origin{id, std::nullopt};
    if (auto content = protocol::parse_untrusted_json(batch->front().reply.content);
        content.is_object() && content.contains("execution_count") && content["execution_count"].is_number_integer())
      origin.execution_count = content["execution_count"].get<int64_t>();
    for (auto& waiter : *batch) attach_snapshot_info(waiter.reply, info);
    asio::post(io_, [this, ref, taken = std::move(taken), origin = std::move(origin), batch]() mutable {
      if (taken.created && events_)
        events_->publish(events::EventType::kSnapshot, ref.owner,
                         {{"workspace", ref.name}, {"snapshot", taken.id}, {"kernel_id", origin.kernel_id}, {"automatic", true}});
      if (!taken.created && taken.pruned.empty()) return walk_done(ref, *batch, taken.id);
      // The index is written before the client hears of the snapshot.
      std::string snap_id = taken.id;
      index_then(ref, std::move(taken), workspace::SnapshotOptions{}, std::move(origin),
                 [this, ref, batch, snap_id] { walk_done(ref, *batch, snap_id); });
    });
  });
}

void Snapshots::walk_done(const workspace::WorkspaceRef& ref, std::vector<Waiter>& batch, const std::string& snapshot_id) {
  for (auto& waiter : batch) waiter.deliver(std::move(waiter.reply), snapshot_id);
  auto it = walks_.find(ref.owner + "/" + ref.name);
  if (it == walks_.end()) return;
  it->second.running = false;
  if (it->second.next.empty()) {
    walks_.erase(it);
  } else {
    start_walk(ref);
  }
}

void Snapshots::index_then(const workspace::WorkspaceRef& ref, workspace::SnapshotResult taken,
                           workspace::SnapshotOptions options, SnapshotOrigin origin, std::function<void()> then) {
  const std::string kernel_id = origin.kernel_id;
  auto work = [ref, taken = std::move(taken), options = std::move(options), origin = std::move(origin)](state::Database& db) {
    return index_snapshot(db, ref, taken, options, origin);
  };
  // Runs on the database thread: back to the io thread with the outcome.
  auto done = [this, kernel_id, then](common::Status st) {
    asio::post(io_, [kernel_id, then, st = std::move(st)] {
      if (!st)
        common::log_error("kernel={} msg=\"cannot index snapshot (the store has it; the next start's reconcile indexes "
                          "it)\" error=\"{}\"", kernel_id, st.error().message);
      then();
    });
  };
  // The owner's walks have filled their share of the queue (one index job per workspace at a time, so
  // only behind a database that does not answer): this owner's reply goes out now, unlisted until then.
  if (!db_thread_.post(ref.owner, std::move(work), std::move(done))) {
    common::log_warn("kernel={} owner={} msg=\"snapshot not indexed: the database thread's queue is full (the database "
                     "is slow or away); the next start's reconcile indexes it\"", kernel_id, ref.owner);
    then();
  }
}

void Snapshots::baseline(const std::shared_ptr<KernelHub>& hub,
                         std::function<void(std::string, std::string, uint64_t)> done) {
  workspace::WorkspaceRef ref{hub->owner, hub->workspace};
  auto ws_config = workspaces_.config();
  if (auto cfg = hub->workspace_config) ws_config = *cfg;
  const std::string id = hub->kernel().id();
  // On the walks' strand: one walk at a time, after-execute snapshots and baselines alike.
  asio::post(walk_strand_, [this, ref, ws_config, id, done = std::move(done)]() mutable {
    workspace::SnapshotResult taken;
    workspace::SnapshotOptions options;
    options.automatic = false;
    options.label = "journal " + id;
    options.only_if_changed = false;  // its own manifest, deleted with the journal whatever else happens
    std::string error;
    auto ws = workspaces_.open(ref);
    if (!ws) {
      error = ws.error().message;
    } else {
      change_watch_.begin_walk(ws->tree_path());
      workspace::Workspace w(workspaces_.store(), ws->dir(), ws_config);
      auto snap = w.snapshot(options);
      if (!snap) {
        change_watch_.invalidate(ws->tree_path());
        error = "snapshot failed: " + snap.error().message;
      } else {
        taken = snap.value();
      }
      change_watch_.end_walk(ws->tree_path());
    }
    asio::post(io_, [this, ref, id, options, taken = std::move(taken), error = std::move(error),
                     done = std::move(done)]() mutable {
      if (!error.empty()) common::log_warn("kernel={} msg=\"no journal baseline\" error=\"{}\"", id, error);
      if (!taken.created) return done(taken.id, error, taken.bytes);
      std::string snap_id = taken.id;
      const uint64_t bytes = taken.bytes;
      auto then = [done = std::move(done), snap_id, error, bytes] { done(snap_id, error, bytes); };
      index_then(ref, std::move(taken), options, SnapshotOrigin{id, std::nullopt}, std::move(then));
    });
  });
}

}  // namespace cellgate::gateway
