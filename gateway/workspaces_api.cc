// SPDX-License-Identifier: BSD-3-Clause
// workspaces_api: /api/workspaces — workspaces, their files, snapshots, diff, restore and archives.
#include "common/log.h"
#include "gateway/gateway.h"
#include "gateway/snapshot_index.h"
#include "protocol/json_text.h"
#include "state/workspace_records.h"
#include "workspace/file_api.h"
#include "workspace/layout.h"

namespace cellgate::gateway {

using boost::asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxArchiveBytes = 512ull << 20;

const char* type_name(workspace::NodeType t) {
  switch (t) {
    case workspace::NodeType::kFile: return "file";
    case workspace::NodeType::kDir: return "directory";
    case workspace::NodeType::kSymlink: return "symlink";
    case workspace::NodeType::kOther: return "other";
  }
  return "other";
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

// After a store operation that made snapshots the gateway did not take itself (fork, restore).
awaitable<void> resync_index(Gateway& gw, workspace::WorkspaceRef ref) {
  auto known = indexed_ids(gw.db(), ref);
  if (!known) co_return;
  auto& mgr = gw.workspaces();
  auto in_store = co_await gw.offload([&] { return store_snapshots(mgr, ref, known.value()); });
  if (!in_store) co_return;
  (void)apply_store_snapshots(gw.db(), ref, in_store.value());
}

Response raw_response(const Request& req, std::string body, const char* content_type) {
  Response res{http::status::ok, req.version()};
  res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace

awaitable<Response> handle_workspaces(Gateway& gw, Request& req, const Caller& caller,
                                      const std::vector<std::string>& parts) {
  const auto method = req.method();
  std::string owner = caller.user.name;
  // An admin may act on another user's workspaces with ?owner=.
  if (std::string o = query_param(std::string_view(req.target().data(), req.target().size()), "owner");
      !o.empty() && caller.user.admin)
    owner = o;
  auto& mgr = gw.workspaces();
  auto body_json = [&]() -> json {
    if (req.body().empty()) return json::object();
    auto j = protocol::parse_untrusted_json(req.body());
    return j.is_object() ? j : json();
  };

  if (parts.size() == 2) {
    if (method == http::verb::get) {
      auto names = co_await gw.offload([&] { return mgr.list(owner); });
      if (!names) co_return error_response(req, names.error());
      json list = json::array();
      for (const auto& n : names.value()) list.push_back({{"name", n}, {"owner", owner}});
      co_return json_response(req, http::status::ok, list);
    }
    if (method != http::verb::post) co_return error_response(req, Errc::kBadRequest, "unsupported method");
    json body = body_json();
    if (!body.is_object() || !body.contains("name") || !body["name"].is_string())
      co_return error_response(req, Errc::kBadRequest, "body must be {\"name\": string}");
    workspace::WorkspaceRef ref{owner, body["name"].get<std::string>()};
    auto ws = co_await gw.offload([&] { return mgr.create(ref); });
    if (!ws) co_return error_response(req, ws.error());
    (void)state::ensure_workspace(gw.db(), state::WorkspaceRow{owner, ref.name, common::iso8601_now(), false});
    gw.audit(caller, "create", "workspace", owner + "/" + ref.name);
    Response res = json_response(req, http::status::created, {{"name", ref.name}, {"owner", owner}});
    res.set(http::field::location, gw.config().base_url + "api/workspaces/" + ref.name);
    co_return res;
  }

  workspace::WorkspaceRef ref{owner, parts[2]};
  auto opened = co_await gw.offload([&] { return mgr.open(ref); });
  if (!opened) co_return error_response(req, opened.error());
  auto ws_config = gw.workspace_config(caller.user);
  workspace::Workspace ws(mgr.store(), opened->dir(), ws_config);
  std::vector<std::string> users_of;
  for (const auto& [id, hub] : gw.kernels())
    if (hub->owner == owner && hub->workspace == ref.name) users_of.push_back(id);

  if (parts.size() == 3) {
    if (method == http::verb::get) {
      auto snaps = state::list_snapshots(gw.db(), owner, ref.name);
      co_return json_response(req, http::status::ok,
                              {{"name", ref.name}, {"owner", owner}, {"head", ws.head_id()},
                               {"snapshots", snaps ? snaps->size() : 0}, {"kernels", users_of}});
    }
    if (method == http::verb::delete_) {
      if (!users_of.empty())
        co_return error_response(req, Errc::kConflict, "workspace is in use by kernel " + users_of.front());
      auto st = co_await gw.offload([&] { return mgr.remove(ref); });
      gw.audit(caller, "delete", "workspace", owner + "/" + ref.name, json::object(), st.has_value());
      if (!st) co_return error_response(req, st.error());
      (void)unindex_workspace(gw.db(), ref);
      co_return empty_response(req);
    }
    co_return error_response(req, Errc::kBadRequest, "unsupported method");
  }

  const std::string& what = parts[3];
  if (what == "files") {
    std::string path;
    for (size_t i = 4; i < parts.size(); ++i) path += (path.empty() ? "" : "/") + parts[i];
    workspace::FileApi files(ws.tree_path());
    if (method == http::verb::get) {
      auto st = co_await gw.offload([&] { return files.stat(path); });
      if (!st) co_return error_response(req, st.error());
      if (st->type == workspace::NodeType::kDir) {
        auto list = co_await gw.offload([&] { return files.list_dir(path); });
        if (!list) co_return error_response(req, list.error());
        json entries = json::array();
        for (const auto& n : list.value())
          entries.push_back({{"name", n.name}, {"type", type_name(n.type)}, {"size", n.size},
                             {"mode", n.mode}, {"mtime", common::iso8601(common::SystemTime(std::chrono::nanoseconds(n.mtime_ns)))}});
        co_return json_response(req, http::status::ok, {{"path", path}, {"type", "directory"}, {"entries", entries}});
      }
      // Sent from the open file in pieces: no size bound, and nothing of it held in memory.
      auto file = co_await gw.offload([&] { return files.open_file(path); });
      if (!file) co_return error_response(req, file.error());
      Response res = raw_response(req, "", "application/octet-stream");
      gw.file_replies().attach(res, http::FileBody{std::move(file->fd), file->size});
      co_return res;
    }
    if (method == http::verb::put) {
      auto st = co_await gw.offload([&] { return files.write_file(path, req.body()); });
      if (!st) co_return error_response(req, st.error());
      co_return json_response(req, http::status::created, {{"path", path}, {"bytes", req.body().size()}});
    }
    if (method == http::verb::delete_) {
      bool recursive = query_param(std::string_view(req.target().data(), req.target().size()), "recursive") == "true";
      auto st = co_await gw.offload([&] { return files.remove(path, recursive); });
      if (!st) co_return error_response(req, st.error());
      co_return empty_response(req);
    }
    co_return error_response(req, Errc::kBadRequest, "unsupported method");
  }
  if (what == "diff" && parts.size() == 4 && method == http::verb::get) {
    std::string_view target(req.target().data(), req.target().size());
    std::string from = query_param(target, "from"), to = query_param(target, "to");
    if (from.empty()) co_return error_response(req, Errc::kBadRequest, "from= is required");
    if (to.empty()) to = ws.head_id();
    auto d = co_await gw.offload([&] { return ws.diff(from, to); });
    if (!d) co_return error_response(req, d.error());
    json out = diff_json(d.value());
    out["from"] = from;
    out["to"] = to;
    co_return json_response(req, http::status::ok, out);
  }
  if (what != "snapshots") co_return error_response(req, Errc::kNotFound, "not found");

  if (parts.size() == 4) {
    if (method == http::verb::get) {
      // Served from the index (the database), which start-up reconciles with the store.
      auto snaps = state::list_snapshots(gw.db(), owner, ref.name);
      if (!snaps) co_return error_response(req, snaps.error());
      json list = json::array();
      for (const auto& s : snaps.value()) list.push_back(snapshot_row_json(s));
      co_return json_response(req, http::status::ok, list);
    }
    if (method != http::verb::post) co_return error_response(req, Errc::kBadRequest, "unsupported method");
    json body = body_json();
    if (body.is_null()) co_return error_response(req, Errc::kBadRequest, "body must be a JSON object");
    workspace::SnapshotOptions opts;
    opts.automatic = false;
    opts.only_if_changed = false;
    if (body.contains("label")) {
      if (!body["label"].is_string()) co_return error_response(req, Errc::kBadRequest, "label must be a string");
      opts.label = body["label"];
    }
    if (opts.label.empty()) opts.label = "manual";
    auto snap = co_await gw.offload([&] { return ws.snapshot(opts); });
    gw.audit(caller, "snapshot", "workspace", owner + "/" + ref.name, {{"label", opts.label}}, snap.has_value());
    if (!snap) co_return error_response(req, snap.error());
    // The snapshot exists either way; a row that could not be written is rebuilt at the next start.
    if (auto st = index_snapshot(gw.db(), ref, snap.value(), opts, SnapshotOrigin{}); !st)
      common::log_error("workspace={}/{} msg=\"cannot index snapshot\" error=\"{}\"", owner, ref.name, st.error().message);
    json out = diff_json(snap->diff);
    out["id"] = snap->id;
    out["label"] = opts.label;
    out["files_hashed"] = snap->files_hashed;
    Response res = json_response(req, http::status::created, out);
    res.set(http::field::location, gw.config().base_url + "api/workspaces/" + ref.name + "/snapshots/" + snap->id);
    co_return res;
  }
  const std::string& snap_id = parts[4];
  if (parts.size() == 5) {
    if (method == http::verb::get) {
      auto m = co_await gw.offload([&] { return ws.load_snapshot(snap_id); });
      if (!m) co_return error_response(req, m.error());
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
      co_return json_response(req, http::status::ok,
                              {{"id", m->id}, {"label", m->label}, {"automatic", m->automatic},
                               {"created", common::iso8601(common::SystemTime(std::chrono::nanoseconds(m->created_ns)))},
                               {"entries", entries}});
    }
    if (method == http::verb::delete_) {
      auto st = co_await gw.offload([&] { return ws.delete_snapshot(snap_id); });
      gw.audit(caller, "delete", "snapshot", owner + "/" + ref.name + "@" + snap_id, json::object(), st.has_value());
      if (!st) co_return error_response(req, st.error());
      (void)unindex_snapshot(gw.db(), ref, snap_id);
      co_return empty_response(req);
    }
    co_return error_response(req, Errc::kBadRequest, "unsupported method");
  }
  if (parts.size() == 6 && parts[5] == "restore" && method == http::verb::post) {
    json body = body_json();
    if (body.is_null()) co_return error_response(req, Errc::kBadRequest, "body must be a JSON object");
    if (body.contains("to") && !body["to"].is_null()) {
      if (!body["to"].is_string()) co_return error_response(req, Errc::kBadRequest, "to must be a workspace name");
      workspace::WorkspaceRef to{owner, body["to"].get<std::string>()};
      auto forked = co_await gw.offload([&] { return mgr.fork(ref, snap_id, to); });
      gw.audit(caller, "restore", "workspace", owner + "/" + to.name, {{"from", ref.name}, {"snapshot", snap_id}},
               forked.has_value());
      if (!forked) co_return error_response(req, forked.error());
      co_await resync_index(gw, to);
      co_return json_response(req, http::status::created, {{"restored", snap_id}, {"workspace", to.name}, {"forked_from", ref.name}});
    }
    auto r = co_await gw.offload([&] { return ws.restore(snap_id); });
    gw.audit(caller, "restore", "workspace", owner + "/" + ref.name, {{"snapshot", snap_id}}, r.has_value());
    if (!r) co_return error_response(req, r.error());
    co_await resync_index(gw, ref);
    json out = diff_json(r->applied);
    out["restored"] = snap_id;
    out["workspace"] = ref.name;
    out["files_written"] = r->files_written;
    co_return json_response(req, http::status::ok, out);
  }
  if (parts.size() == 6 && parts[5] == "archive" && method == http::verb::get) {
    // Staged in an unnamed file, not in memory: N slow downloads of big archives would otherwise hold
    // N archives in the gateway's memory for as long as their clients take.
    const std::string staging = workspace::data_tmp_dir(gw.config().data_dir);
    auto tar = co_await gw.offload([&]() -> common::Result<http::FileBody> {
      auto fd = http::open_unnamed_file(staging);
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
    if (!tar) co_return error_response(req, tar.error());
    Response res = raw_response(req, "", "application/x-tar");
    res.set(http::field::content_disposition, "attachment; filename=\"" + ref.name + "-" + snap_id + ".tar\"");
    gw.file_replies().attach(res, std::move(tar.value()));
    co_return res;
  }
  co_return error_response(req, Errc::kNotFound, "not found");
}

}  // namespace cellgate::gateway
