// SPDX-License-Identifier: BSD-3-Clause
// snapshots_api: a workspace's snapshots.
#include "gateway/api/snapshots_api.h"

#include "common/log.h"
#include "common/time_format.h"
#include "gateway/audit.h"
#include "gateway/kernel_manager.h"
#include "gateway/workspace_caps.h"
#include "gateway/offload.h"
#include "gateway/snapshot_index.h"
#include "protocol/json_text.h"
#include "state/workspace_records.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxArchiveBytes = 512ull << 20;

double seconds_since(std::chrono::steady_clock::time_point began) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

const char* type_name(workspace::EntryType t) {
  switch (t) {
    case workspace::EntryType::kFile: return "file";
    case workspace::EntryType::kDir: return "directory";
    case workspace::EntryType::kSymlink: return "symlink";
  }
  return "other";
}

json diff_json(const workspace::Diff& d) { return {{"added", d.added}, {"changed", d.changed}, {"removed", d.removed}}; }

json snapshot_row_json(const state::SnapshotRow& s) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  return {{"id", s.snapshot_id},
          {"created", s.created},
          {"automatic", s.auto_taken},
          {"label", s.label},
          {"entries", s.entries},
          {"bytes", s.bytes},
          {"parent", s.parent.empty() ? json(nullptr) : json(s.parent)},
          {"kernel_id", s.kernel_id.empty() ? json(nullptr) : json(s.kernel_id)},
          {"execution_count", opt(s.execution_count)},
          {"added", opt(s.added)},
          {"changed", opt(s.changed)},
          {"removed", opt(s.removed)}};
}

// A JSON object body ({} when empty); null when it is not one.
json object_body(const http::Request& req) {
  if (req.body().empty()) return json::object();
  auto j = protocol::parse_untrusted_json(req.body());
  return j.is_object() ? j : json();
}

http::Reply bad_request(const http::Request& req, std::string message) {
  return reply(http::error_response(req, Errc::kBadRequest, std::move(message)));
}

std::string name_of(const workspace::WorkspaceRef& ref) { return ref.owner + "/" + ref.name; }

}  // namespace

awaitable<void> SnapshotsApi::resync_index(workspace::WorkspaceRef ref) {
  auto known = gateway::indexed_ids(db_, ref);
  if (!known) co_return;
  auto in_store = co_await offload_.run([&] { return gateway::store_snapshots(workspaces_, ref, known.value()); });
  if (!in_store) co_return;
  (void)gateway::apply_store_snapshots(db_, ref, in_store.value());
}

awaitable<http::Reply> SnapshotsApi::list(Call& call) {
  const auto& ref = *call.workspace_ref;
  // Served from the index (the database), which start-up reconciles with the store.
  auto snaps = state::list_snapshots(db_, ref.owner, ref.name);
  if (!snaps) co_return reply(http::error_response(call.req, snaps.error()));
  json list = json::array();
  for (const auto& s : snaps.value()) list.push_back(snapshot_row_json(s));
  co_return reply(http::json_response(call.req, http::status::ok, list));
}

awaitable<http::Reply> SnapshotsApi::take(Call& call) {
  const auto& ref = *call.workspace_ref;
  auto& ws = *call.workspace;
  json body = object_body(call.req);
  if (body.is_null()) co_return bad_request(call.req, "body must be a JSON object");
  workspace::SnapshotOptions opts;
  opts.automatic = false;
  opts.only_if_changed = false;
  if (body.contains("label")) {
    if (!body["label"].is_string()) co_return bad_request(call.req, "label must be a string");
    opts.label = body["label"];
  }
  if (opts.label.empty()) opts.label = "manual";
  const auto began = std::chrono::steady_clock::now();
  auto snap = co_await offload_.run([&] { return ws.snapshot(opts); });
  audit_.record(call.caller.user.name, "snapshot", "workspace", name_of(ref), {{"label", opts.label}}, snap.has_value());
  if (!snap) co_return reply(http::error_response(call.req, snap.error()));
  metrics_.snapshot_taken(seconds_since(began));
  events_.publish(events::EventType::kSnapshot, ref.owner,
                  {{"workspace", ref.name}, {"snapshot", snap->id}, {"label", opts.label}, {"by", call.caller.user.name}});
  // The snapshot exists either way; a row that could not be written is rebuilt at the next start.
  if (auto st = gateway::index_snapshot(db_, ref, snap.value(), opts, gateway::SnapshotOrigin{}); !st)
    common::log_error("workspace={} msg=\"cannot index snapshot\" error=\"{}\"", name_of(ref), st.error().message);
  json out = diff_json(snap->diff);
  out["id"] = snap->id;
  out["label"] = opts.label;
  out["files_hashed"] = snap->files_hashed;
  out["bytes_hashed"] = snap->bytes_hashed;
  http::Response res = http::json_response(call.req, http::status::created, out);
  res.set(http::field::location, base_url_ + "api/workspaces/" + ref.name + "/snapshots/" + snap->id);
  co_return reply(std::move(res));
}

awaitable<http::Reply> SnapshotsApi::get(Call& call) {
  const std::string& snap_id = call.param("snapshot");
  auto& ws = *call.workspace;
  auto m = co_await offload_.run([&] { return ws.load_snapshot(snap_id); });
  if (!m) co_return reply(http::error_response(call.req, m.error()));
  json entries = json::array();
  for (const auto& e : m->entries) {
    json je = {{"path", e.path}, {"type", type_name(e.type)}, {"mode", e.mode},
               {"mtime", common::iso8601(common::SystemTime(std::chrono::nanoseconds(e.mtime_ns)))}};
    if (e.type == workspace::EntryType::kFile) {
      je["size"] = e.size;
      je["hash"] = e.hash;
    }
    if (e.type == workspace::EntryType::kSymlink) je["target"] = e.link_target;
    entries.push_back(std::move(je));
  }
  co_return reply(http::json_response(
      call.req, http::status::ok,
      {{"id", m->id}, {"label", m->label}, {"automatic", m->automatic},
       {"created", common::iso8601(common::SystemTime(std::chrono::nanoseconds(m->created_ns)))}, {"entries", entries}}));
}

awaitable<http::Reply> SnapshotsApi::remove(Call& call) {
  const auto& ref = *call.workspace_ref;
  const std::string& snap_id = call.param("snapshot");
  auto& ws = *call.workspace;
  auto st = co_await offload_.run([&] { return ws.delete_snapshot(snap_id); });
  audit_.record(call.caller.user.name, "delete", "snapshot", name_of(ref) + "@" + snap_id, json::object(), st.has_value());
  if (!st) co_return reply(http::error_response(call.req, st.error()));
  (void)gateway::unindex_snapshot(db_, ref, snap_id);
  co_return reply(http::empty_response(call.req));
}

awaitable<http::Reply> SnapshotsApi::restore(Call& call) {
  const auto ref = *call.workspace_ref;
  const std::string snap_id = call.param("snapshot");
  auto& ws = *call.workspace;
  json body = object_body(call.req);
  if (body.is_null()) co_return bad_request(call.req, "body must be a JSON object");
  if (body.contains("to") && !body["to"].is_null()) {
    if (!body["to"].is_string()) co_return bad_request(call.req, "to must be a workspace name");
    const auto& caps = ws.config();  // the owner's (the router's), as the new workspace is theirs
    workspace::WorkspaceRef to{ref.owner, body["to"].get<std::string>(), caps.max_bytes, caps.store_bytes};
    auto forked = co_await offload_.run([&] { return workspaces_.fork(ref, snap_id, to); });
    audit_.record(call.caller.user.name, "restore", "workspace", name_of(to), {{"from", ref.name}, {"snapshot", snap_id}},
                  forked.has_value());
    if (!forked) co_return reply(http::error_response(call.req, forked.error()));
    events_.publish(events::EventType::kRestore, ref.owner,
                    {{"workspace", to.name}, {"snapshot", snap_id}, {"forked_from", ref.name}, {"by", call.caller.user.name}});
    co_await resync_index(to);
    co_return reply(http::json_response(call.req, http::status::created,
                                        {{"restored", snap_id}, {"workspace", to.name}, {"forked_from", ref.name}}));
  }
  const auto began = std::chrono::steady_clock::now();
  auto r = co_await offload_.run([&] { return ws.restore(snap_id); });
  audit_.record(call.caller.user.name, "restore", "workspace", name_of(ref), {{"snapshot", snap_id}}, r.has_value());
  if (!r) co_return reply(http::error_response(call.req, r.error()));
  metrics_.snapshot_restored(seconds_since(began));
  events_.publish(events::EventType::kRestore, ref.owner,
                  {{"workspace", ref.name}, {"snapshot", snap_id}, {"files_written", r->files_written},
                   {"by", call.caller.user.name}});
  co_await resync_index(ref);
  json out = diff_json(r->applied);
  out["restored"] = snap_id;
  out["workspace"] = ref.name;
  out["files_written"] = r->files_written;
  co_return reply(http::json_response(call.req, http::status::ok, out));
}

awaitable<http::Reply> SnapshotsApi::archive(Call& call) {
  const auto& ref = *call.workspace_ref;
  const std::string& snap_id = call.param("snapshot");
  auto& ws = *call.workspace;
  // Staged in an unnamed file, not in memory: N slow downloads of big archives would otherwise hold
  // N archives in the gateway's memory for as long as their clients take.
  auto tar = co_await offload_.run([&]() -> common::Result<http::FileBody> {
    auto fd = http::open_unnamed_file(staging_);
    if (!fd) return fd.error();
    uint64_t size = 0;
    const workspace::TarSink to_file = workspace::fd_sink(fd->get());
    auto st = ws.write_tar(snap_id, [&](std::string_view chunk) -> common::Status {
      if (size + chunk.size() > kMaxArchiveBytes)
        return common::make_error(Errc::kTooLarge, "archive larger than 512 MiB; fork the workspace instead");
      size += chunk.size();
      return to_file(chunk);
    });
    if (!st) return st.error();
    return http::FileBody{std::move(fd.value()), size};
  });
  if (!tar) co_return reply(http::error_response(call.req, tar.error()));
  http::Reply out;
  out.res = http::Response{http::status::ok, call.req.version()};
  out.res.set(http::field::content_type, "application/x-tar");
  out.res.set(http::field::cache_control, "no-store");
  out.res.set(http::field::content_disposition, "attachment; filename=\"" + ref.name + "-" + snap_id + ".tar\"");
  out.res.keep_alive(call.req.keep_alive());
  out.res.content_length(tar->size);
  out.file = std::move(tar.value());
  co_return out;
}

awaitable<http::Reply> SnapshotsApi::diff(Call& call) {
  auto& ws = *call.workspace;
  std::string from = call.query("from"), to = call.query("to");
  if (from.empty()) co_return bad_request(call.req, "from= is required");
  if (to.empty()) to = ws.head_id();
  auto d = co_await offload_.run([&] { return ws.diff(from, to); });
  if (!d) co_return reply(http::error_response(call.req, d.error()));
  json out = diff_json(d.value());
  out["from"] = from;
  out["to"] = to;
  co_return reply(http::json_response(call.req, http::status::ok, out));
}

}  // namespace cellgate::api
