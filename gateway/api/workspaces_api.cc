// SPDX-License-Identifier: BSD-3-Clause
// workspaces_api: /api/workspaces and their files.
#include "gateway/api/workspaces_api.h"

#include <fmt/core.h>

#include "common/time_format.h"
#include "gateway/audit.h"
#include "gateway/kernel_manager.h"
#include "gateway/workspace_caps.h"
#include "gateway/offload.h"
#include "gateway/snapshot_index.h"
#include "protocol/json_text.h"
#include "state/workspace_records.h"
#include "workspace/file_api.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {

const char* type_name(workspace::NodeType t) {
  switch (t) {
    case workspace::NodeType::kFile: return "file";
    case workspace::NodeType::kDir: return "directory";
    case workspace::NodeType::kSymlink: return "symlink";
    case workspace::NodeType::kOther: return "other";
  }
  return "other";
}

// A write refused by the workspace's live quota (EDQUOT, or ENOSPC when the whole volume is full).
std::string quota_message(const workspace::WorkspaceManager& mgr, const workspace::WorkspaceRef& ref, uint64_t max_bytes) {
  // The owner's workspaces together (--user-workspace-bytes), when they are what is full: within a
  // write's reservation of their limit (btrfs reserves ahead, up to a few MiB).
  if (auto g = mgr.owner_quota(ref.owner); g && g->limit != 0 && g->referenced + (8u << 20) >= g->limit)
    return fmt::format("the workspaces of user {} are full: together they may hold {} bytes (user_workspace_bytes) "
                       "and hold {}", ref.owner, g->limit, g->referenced);
  if (auto q = mgr.quota(ref); q && q->limit != 0)
    return fmt::format("workspace {} is full: its quota (workspace_bytes) is {} bytes and it holds {}", ref.name,
                       q->limit, q->referenced);
  return fmt::format("workspace {} is full: its quota (workspace_bytes) is {} bytes", ref.name, max_bytes);
}

}  // namespace

std::vector<std::string> WorkspacesApi::kernels_on(const workspace::WorkspaceRef& ref) const {
  std::vector<std::string> ids;
  for (const auto& [id, hub] : kernels_.kernels())
    if (hub->owner == ref.owner && hub->workspace == ref.name) ids.push_back(id);
  return ids;
}

awaitable<http::Reply> WorkspacesApi::list(Call& call) {
  std::string owner = call.caller.user.name;
  if (std::string o = call.query("owner"); !o.empty() && call.caller.user.admin) owner = o;
  auto names = co_await offload_.run([&] { return workspaces_.list(owner); });
  if (!names) co_return reply(http::error_response(call.req, names.error()));
  json list = json::array();
  for (const auto& n : names.value()) list.push_back({{"name", n}, {"owner", owner}});
  co_return reply(http::json_response(call.req, http::status::ok, list));
}

awaitable<http::Reply> WorkspacesApi::create(Call& call) {
  std::string owner = call.caller.user.name;
  if (std::string o = call.query("owner"); !o.empty() && call.caller.user.admin) owner = o;
  json body = call.req.body().empty() ? json::object() : protocol::parse_untrusted_json(call.req.body());
  if (!body.is_object() || !body.contains("name") || !body["name"].is_string())
    co_return reply(http::error_response(call.req, Errc::kBadRequest, "body must be {\"name\": string}"));
  // With a workspace volume, the tree is made with its owner's quota (a live limit), whoever creates it.
  state::UserStore users(db_);
  auto caps = gateway::owner_workspace_config(workspaces_.config(), users, call.caller.user, owner);
  if (!caps) co_return reply(http::error_response(call.req, caps.error()));
  workspace::WorkspaceRef ref{owner, body["name"].get<std::string>(), caps->max_bytes};
  auto ws = co_await offload_.run([&] { return workspaces_.create(ref); });
  if (!ws) co_return reply(http::error_response(call.req, ws.error()));
  (void)state::ensure_workspace(db_, state::WorkspaceRow{owner, ref.name, common::iso8601_now(), false});
  audit_.record(call.caller.user.name, "create", "workspace", owner + "/" + ref.name);
  http::Response res = http::json_response(call.req, http::status::created, {{"name", ref.name}, {"owner", owner}});
  res.set(http::field::location, base_url_ + "api/workspaces/" + ref.name);
  co_return reply(std::move(res));
}

awaitable<http::Reply> WorkspacesApi::get(Call& call) {
  const auto& ref = *call.workspace_ref;
  auto snaps = state::list_snapshots(db_, ref.owner, ref.name);
  json out = {{"name", ref.name}, {"owner", ref.owner}, {"head", call.workspace->head_id()},
              {"snapshots", snaps ? snaps->size() : 0}, {"kernels", kernels_on(ref)}};
  // The live quota where the volume enforces one ("used": as of its last commit, <= 30 s ago).
  if (auto q = workspaces_.quota(ref); q) out["quota"] = {{"bytes", q->limit}, {"used", q->referenced}};
  co_return reply(http::json_response(call.req, http::status::ok, out));
}

awaitable<http::Reply> WorkspacesApi::remove(Call& call) {
  const auto ref = *call.workspace_ref;
  if (auto users = kernels_on(ref); !users.empty())
    co_return reply(http::error_response(call.req, Errc::kConflict, "workspace is in use by kernel " + users.front()));
  auto st = co_await offload_.run([&] { return workspaces_.remove(ref); });
  audit_.record(call.caller.user.name, "delete", "workspace", ref.owner + "/" + ref.name, json::object(), st.has_value());
  if (!st) co_return reply(http::error_response(call.req, st.error()));
  (void)gateway::unindex_workspace(db_, ref);
  co_return reply(http::empty_response(call.req));
}

awaitable<http::Reply> WorkspacesApi::read_file(Call& call) {
  const std::string& path = call.param("path");
  workspace::FileApi files(call.workspace->tree_path());
  auto st = co_await offload_.run([&] { return files.stat(path); });
  if (!st) co_return reply(http::error_response(call.req, st.error()));
  if (st->type == workspace::NodeType::kDir) {
    auto list = co_await offload_.run([&] { return files.list_dir(path); });
    if (!list) co_return reply(http::error_response(call.req, list.error()));
    json entries = json::array();
    for (const auto& n : list.value())
      entries.push_back({{"name", n.name}, {"type", type_name(n.type)}, {"size", n.size}, {"mode", n.mode},
                         {"mtime", common::iso8601(common::SystemTime(std::chrono::nanoseconds(n.mtime_ns)))}});
    co_return reply(http::json_response(call.req, http::status::ok,
                                        {{"path", path}, {"type", "directory"}, {"entries", entries}}));
  }
  auto file = co_await offload_.run([&] { return files.open_file(path); });
  if (!file) co_return reply(http::error_response(call.req, file.error()));
  http::Reply out;
  out.res = http::Response{http::status::ok, call.req.version()};
  out.res.set(http::field::content_type, "application/octet-stream");
  out.res.set(http::field::cache_control, "no-store");
  out.res.keep_alive(call.req.keep_alive());
  out.res.content_length(file->size);
  out.file = http::FileBody{std::move(file->fd), file->size};
  co_return out;
}

awaitable<http::Reply> WorkspacesApi::write_file(Call& call) {
  const std::string& path = call.param("path");
  workspace::FileApi files(call.workspace->tree_path());
  auto st = co_await offload_.run([&] { return files.write_file(path, call.req.body()); });
  if (!st && st.error().code == Errc::kInsufficientStorage)
    co_return reply(http::error_response(
        call.req, Errc::kInsufficientStorage,
        quota_message(workspaces_, *call.workspace_ref, call.workspace->config().max_bytes)));
  if (!st) co_return reply(http::error_response(call.req, st.error()));
  co_return reply(http::json_response(call.req, http::status::created, {{"path", path}, {"bytes", call.req.body().size()}}));
}

awaitable<http::Reply> WorkspacesApi::delete_file(Call& call) {
  const std::string& path = call.param("path");
  workspace::FileApi files(call.workspace->tree_path());
  const bool recursive = call.query("recursive") == "true";
  auto st = co_await offload_.run([&] { return files.remove(path, recursive); });
  if (!st) co_return reply(http::error_response(call.req, st.error()));
  co_return reply(http::empty_response(call.req));
}

}  // namespace cellgate::api
