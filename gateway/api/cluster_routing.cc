// SPDX-License-Identifier: BSD-3-Clause
// cluster_routing: forwarding, relaying and placement across the cluster's nodes.
#include "gateway/api/cluster_routing.h"

#include <algorithm>

#include "common/log.h"
#include "common/random.h"
#include "common/time_format.h"
#include "gateway/api/kernel_relay.h"
#include "gateway/database_call.h"
#include "gateway/gateway.h"
#include "gateway/http/peer_client.h"
#include "gateway/node_membership.h"
#include "state/database.h"
#include "state/node_records.h"
#include "state/placement.h"
#include "workspace/layout.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;

namespace {

bool may_see(const state::KernelRecord& row, const state::User& user) {
  if (row.owner.empty() || row.owner.front() == '@' || row.owner == gateway::KernelManager::kNotebookHttpOwner)
    return false;
  return row.owner == user.name || user.admin;
}

// Another node's kernel from its row alone (a dead one's, or in lists).
nlohmann::json row_model(const state::KernelRecord& row) {
  nlohmann::json m = {{"id", row.id},
                      {"name", row.kernelspec},
                      {"last_activity", row.created},
                      {"execution_state", row.state == "dead" ? "dead" : "unknown"},
                      {"paused", false},
                      {"connections", 0},
                      {"owner", row.owner},
                      {"workspace", row.workspace},
                      {"network", {{"mode", "none"}}},
                      {"node", row.node}};
  // The row keeps the policy canonical (egress/policy.h), as the holding node shows it.
  if (auto n = nlohmann::json::parse(row.network, nullptr, false); !row.network.empty() && n.is_object())
    m["network"] = std::move(n);
  if (!row.reason.empty()) m["reason"] = row.reason;
  return m;
}

// The kernel's row and, when another node holds it alive, that node's internal address: what routing
// reads, in one call. kNotFound: no row, or (viewer given) one the viewer may not see, so that the
// node's row is never read for another user's kernel (its error would tell that the id exists).
common::Result<RemoteKernel> locate(state::Database& db, const std::string& id, const std::string& me,
                                    const std::optional<state::User>& viewer) {
  auto row = state::get_kernel(db, id);
  if (!row) return row.error();
  if (viewer && !may_see(*row, *viewer)) return common::make_error(Errc::kNotFound, "Kernel does not exist: " + id);
  RemoteKernel out{std::move(row.value()), {}};
  if (out.row.node == me || out.row.state == "dead" || out.row.state == "placing") return out;
  auto node = state::get_node(db, out.row.node);
  if (!node)
    return common::make_error(node.error().code == Errc::kNotFound ? Errc::kInternal : node.error().code,
                              "the node of kernel " + id + ": " + node.error().message);
  out.address = node->address;
  return out;
}

// A dead kernel's row goes (its sessions with it); one already gone is no error.
common::Status delete_row(state::Database& db, const std::string& id) {
  auto st = state::delete_kernel(db, id);
  if (!st && st.error().code == Errc::kNotFound) return common::ok();
  return st;
}

// Routing's reads are charged to the user asking: one whose requests wait on a stalled database fills
// their own share of the database thread's queue, not everyone's.
std::string tenant_of(const Call& call) { return "user " + call.caller.user.name; }

// The answer when the database could not say where a kernel is: 503 naming the database (the reads
// did not answer within their deadline, or the database is unavailable); 429 when the user's own
// share of the queue is full.
http::Response database_refusal(const Call& call, const std::string& id, const common::Error& e) {
  if (e.code == Errc::kTooManyRequests) {
    auto res = http::json_response(call.req, http::status::too_many_requests,
                                   {{"reason", "Too Many Requests"},
                                    {"message", "too many of your requests wait for the database; retry later"}});
    res.set(http::field::retry_after, "1");
    return res;
  }
  return http::error_response(call.req, e.code, "cannot find the node of kernel " + id + ": " + e.message);
}

}  // namespace

ClusterRouting::ClusterRouting(gateway::Gateway& gw) : gw_(gw) {
  if (auto* m = gw_.membership()) m->on_nodes([this](const std::vector<state::NodeRow>& nodes) { on_nodes(nodes); });
}

ClusterRouting::~ClusterRouting() {
  if (auto* m = gw_.membership()) m->on_nodes(nullptr);
}

bool ClusterRouting::enabled() const { return gw_.config().clustered(); }

void ClusterRouting::on_nodes(const std::vector<state::NodeRow>& nodes) {
  std::erase_if(relays_, [](const OpenRelay& r) {
    auto relay = r.relay.lock();
    return !relay || relay->ended();
  });
  for (const auto& r : relays_) {
    auto node = std::find_if(nodes.begin(), nodes.end(), [&](const state::NodeRow& n) { return n.id == r.node; });
    // A lost node's kernels are dead ("node lost", sweep_lost_nodes); a row gone is a node removed.
    if (node == nodes.end() || node->state == "lost")
      if (auto relay = r.relay.lock()) relay->kernel_dead("node lost");
  }
}

std::optional<http::Response> ClusterRouting::refuse_if_fenced(const Call& call) const {
  auto* m = gw_.membership();
  if (!m || m->fence()->holds()) return std::nullopt;
  return http::error_response(call.req, Errc::kUnavailable,
                              "node " + m->id() + " cannot renew its cluster lease; its kernels are not served");
}

awaitable<std::optional<http::Response>> ClusterRouting::resolve_remote(Call& call, const std::string& id) {
  // A request another node forwarded was meant for a kernel here: never forwarded again.
  if (!enabled() || !call.caller.peer.cluster_peer.empty()) co_return std::nullopt;
  // The owner check comes before anything about nodes: another user's id is 404 on every node.
  auto read = [id, me = gw_.config().node_id, viewer = std::optional<state::User>(call.caller.user)](state::Database& db) {
    return locate(db, id, me, viewer);
  };
  const std::string tenant = tenant_of(call);
  auto found = co_await gw_.db_calls().call<RemoteKernel>(tenant, read);
  if (!found) {
    if (found.error().code == Errc::kNotFound || found.error().code == Errc::kBadRequest) co_return std::nullopt;
    co_return database_refusal(call, id, found.error());
  }
  if (found->row.node == gw_.config().node_id) co_return std::nullopt;
  if (found->row.state == "placing") co_return http::error_response(call.req, Errc::kConflict, "kernel is still starting");
  call.remote = std::move(found.value());
  co_return std::nullopt;
}

awaitable<http::Reply> ClusterRouting::forward(Call& call) {
  const auto& remote = *call.remote;
  if (remote.row.state == "dead") {
    // Its node is gone: the row is all there is. It can be read and deleted, nothing else.
    const bool kernel_itself = http::target_path(std::string_view(call.req.target().data(), call.req.target().size()))
                                   .ends_with("/api/kernels/" + remote.row.id);
    if (kernel_itself && call.req.method() == http::verb::get)
      co_return reply(http::json_response(call.req, http::status::ok, row_model(remote.row)));
    if (kernel_itself && call.req.method() == http::verb::delete_) {
      auto remove = [id = remote.row.id](state::Database& db) { return delete_row(db, id); };
      const std::string tenant = tenant_of(call);
      if (auto st = co_await gw_.db_calls().call<common::Ok>(tenant, remove); !st)
        co_return reply(database_refusal(call, remote.row.id, st.error()));
      co_return reply(http::empty_response(call.req));
    }
    co_return reply(http::error_response(call.req, Errc::kConflict, "kernel is dead: " + remote.row.reason));
  }
  co_return co_await forward_to(call, remote.row, remote.address);
}

awaitable<http::Reply> ClusterRouting::forward_to(Call& call, const state::KernelRecord& row, const std::string& address) {
  http::Request copy = call.req;
  auto res = co_await gw_.peers()->forward(std::move(copy), address, call.caller.peer.ip, gw_.config().max_body_bytes);
  if (!res) {
    common::log_warn("kernel={} node={} msg=\"cannot forward to the kernel's node\" error=\"{}\"", row.id, row.node,
                     res.error().message);
    co_return reply(http::error_response(call.req, res.error().code == Errc::kTimeout ? Errc::kTimeout : Errc::kUnavailable,
                                         res.error().message));
  }
  co_return reply(std::move(res.value()));
}

awaitable<std::optional<http::Reply>> ClusterRouting::forward_for_kernel(Call& call, const std::string& kernel_id) {
  if (!enabled() || !call.caller.peer.cluster_peer.empty()) co_return std::nullopt;
  auto read = [kernel_id, me = gw_.config().node_id](state::Database& db) {
    return locate(db, kernel_id, me, std::nullopt);
  };
  const std::string tenant = tenant_of(call);
  auto found = co_await gw_.db_calls().call<RemoteKernel>(tenant, read);
  if (!found) {
    if (found.error().code == Errc::kNotFound) co_return std::nullopt;
    co_return reply(database_refusal(call, kernel_id, found.error()));
  }
  if (found->row.node == gw_.config().node_id || found->row.state == "placing") co_return std::nullopt;
  if (found->row.state == "dead") {
    auto remove = [kernel_id](state::Database& db) { return delete_row(db, kernel_id); };
    if (auto st = co_await gw_.db_calls().call<common::Ok>(tenant, remove); !st)
      co_return reply(database_refusal(call, kernel_id, st.error()));
    co_return std::nullopt;
  }
  co_return co_await forward_to(call, found->row, found->address);
}

awaitable<http::Upgrade> ClusterRouting::relay(Call& call, http::WsAccept accept) {
  const auto& remote = *call.remote;
  if (remote.row.state == "dead")
    co_return http::error_response(call.req, Errc::kNotFound, "kernel is dead: " + remote.row.reason);
  auto ws = co_await gw_.peers()->open_ws(call.req, remote.address, call.caller.peer.ip, accept.limits.max_message_bytes);
  if (!ws) {
    common::log_warn("kernel={} node={} msg=\"cannot relay to the kernel's node\" error=\"{}\"", remote.row.id,
                     remote.row.node, ws.error().message);
    co_return http::error_response(call.req, ws.error().code == Errc::kNotFound ? Errc::kNotFound : Errc::kUnavailable,
                                   ws.error().message);
  }
  // When the owner's connection ends, the row says whether the kernel died (its node came back and
  // ended what was declared dead) or the link dropped (the client reconnects).
  auto dead_reason = [&calls = gw_.db_calls(), id = remote.row.id, tenant = tenant_of(call)]() -> awaitable<std::string> {
    auto read = [id](state::Database& db) { return state::get_kernel(db, id); };
    auto row = co_await calls.call<state::KernelRecord>(tenant, read);
    co_return row && row->state == "dead" ? (row->reason.empty() ? std::string("dead") : row->reason) : std::string();
  };
  auto relay = std::make_shared<KernelRelay>(std::move(ws.value()), remote.row.id, accept.limits.queue_bytes,
                                             std::move(dead_reason));
  relays_.push_back({remote.row.node, relay});
  accept.endpoint = std::move(relay);
  co_return accept;
}

awaitable<std::optional<http::Reply>> ClusterRouting::place(Call& call, gateway::KernelManager::StartOptions& options) {
  if (!enabled()) co_return std::nullopt;
  if (auto fenced = refuse_if_fenced(call)) co_return reply(std::move(*fenced));
  auto placed = call.req[kPlacedHeader];
  if (!placed.empty()) {
    // Only a node (mutual TLS) names the row placement wrote; a client may not pick its own id.
    if (call.caller.peer.cluster_peer.empty())
      co_return reply(http::error_response(call.req, Errc::kBadRequest, std::string(kPlacedHeader) + " is for cluster nodes"));
    options.placed_id = std::string(placed);
    co_return std::nullopt;
  }
  const auto& config = gw_.config();
  const state::User& user = call.caller.user;
  state::PlacementRequest r;
  r.kernel_id = common::random_uuid();
  r.owner = user.name;
  r.kernelspec = options.name.empty() ? config.default_kernel : options.name;
  r.workspace = options.workspace;
  if (r.workspace.empty() && options.env.is_object())
    if (auto w = options.env.find("KERNEL_WORKSPACE"); w != options.env.end() && w->is_string())
      r.workspace = w->get<std::string>();
  if (options.ephemeral) r.workspace = "tmp-" + r.kernel_id.substr(0, 8);  // as KernelManager names it
  if (r.workspace.empty()) r.workspace = "default";
  if (auto st = workspace::validate_name(r.workspace); !st)
    co_return reply(http::error_response(call.req, Errc::kBadRequest, "workspace: " + st.error().message));
  r.created = common::iso8601_now();
  r.memory_bytes = static_cast<int64_t>(config.limits.memory_bytes);
  r.max_user_kernels = user.limits.max_kernels ? *user.limits.max_kernels : config.max_kernels_per_user;
  r.lease_ms = int64_t{config.node_lease_s} * 1000;
  auto where = state::place_kernel(gw_.db(), r);
  if (!where) co_return reply(http::error_response(call.req, where.error()));
  if (where->node == config.node_id) {
    options.placed_id = r.kernel_id;
    co_return std::nullopt;
  }
  http::Request copy = call.req;
  copy.set(kPlacedHeader, r.kernel_id);
  auto res = co_await gw_.peers()->forward(std::move(copy), where->address, call.caller.peer.ip, config.max_body_bytes);
  if (!res || res->result_int() >= 300) unplace(r.kernel_id);
  if (!res) {
    common::log_warn("node={} msg=\"cannot start a kernel on the node placement picked\" error=\"{}\"", where->node,
                     res.error().message);
    co_return reply(http::error_response(call.req, Errc::kUnavailable,
                                         "node " + where->node + " could not start the kernel: " + res.error().message));
  }
  co_return reply(std::move(res.value()));
}

std::optional<nlohmann::json> ClusterRouting::remote_model(const std::string& id, const state::User& user) {
  if (!enabled()) return std::nullopt;
  auto row = state::get_kernel(gw_.db(), id);
  if (!row || !may_see(*row, user) || row->node == gw_.config().node_id || row->state == "placing") return std::nullopt;
  return row_model(*row);
}

common::Result<bool> ClusterRouting::held_elsewhere(const std::string& id) {
  if (!enabled()) return false;
  auto row = state::get_kernel(gw_.db(), id);
  if (!row) {
    if (row.error().code == Errc::kNotFound) return false;
    return row.error();
  }
  return row->node != gw_.config().node_id;
}

awaitable<common::Result<std::vector<nlohmann::json>>> ClusterRouting::remote_models(const state::User& user) {
  std::vector<nlohmann::json> out;
  if (!enabled()) co_return out;
  std::optional<std::string> owner;
  if (!user.admin) owner = user.name;
  auto read = [owner](state::Database& db) { return state::list_kernels(db, owner); };
  const std::string tenant = "user " + user.name;
  auto rows = co_await gw_.db_calls().call<std::vector<state::KernelRecord>>(tenant, read);
  if (!rows) co_return rows.error();
  for (const auto& row : rows.value())
    if (may_see(row, user) && row.node != gw_.config().node_id && row.state != "placing") out.push_back(row_model(row));
  co_return out;
}

void ClusterRouting::unplace(const std::string& placed_id) {
  if (auto st = state::unplace_kernel(gw_.db(), placed_id); !st)
    common::log_warn("kernel={} msg=\"cannot delete a placed row\" error=\"{}\"", placed_id, st.error().message);
}

}  // namespace cellgate::api
