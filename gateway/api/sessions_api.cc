// SPDX-License-Identifier: BSD-3-Clause
// sessions_api: /api/sessions.
#include "gateway/api/sessions_api.h"

#include "common/random.h"
#include "gateway/api/cluster_routing.h"
#include "gateway/kernel_manager.h"
#include "protocol/json_text.h"
#include "state/kernel_records.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;
using state::SessionRow;

namespace {

// Reads an optional string field; false when present but not a string.
bool optional_string(const nlohmann::json& body, const char* key, std::string& out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}

struct KernelRef {
  std::string id;
  std::string name;
  nlohmann::json env = nlohmann::json::object();
};

common::Result<KernelRef> kernel_ref(const nlohmann::json& body) {
  KernelRef ref;
  auto k = body.find("kernel");
  if (k == body.end() || k->is_null()) return ref;
  if (!k->is_object()) return common::make_error(Errc::kBadRequest, "kernel must be an object");
  if (!optional_string(*k, "id", ref.id) || !optional_string(*k, "name", ref.name))
    return common::make_error(Errc::kBadRequest, "kernel.id and kernel.name must be strings");
  if (auto e = k->find("env"); e != k->end()) ref.env = *e;
  return ref;
}

// A POST or PATCH body: a JSON object ({} when empty).
std::optional<nlohmann::json> object_body(const http::Request& req) {
  nlohmann::json body = nlohmann::json::object();
  if (!req.body().empty()) body = protocol::parse_untrusted_json(req.body());
  if (body.is_discarded() || !body.is_object()) return std::nullopt;
  return body;
}

http::Reply bad_request(const http::Request& req, std::string message) {
  return reply(http::error_response(req, Errc::kBadRequest, std::move(message)));
}

}  // namespace

common::Result<std::vector<SessionRow>> SessionsApi::visible_sessions(const gateway::Caller& caller) {
  std::optional<std::string> owner;
  if (!caller.user.admin) owner = caller.user.name;
  auto rows = state::list_sessions(db_, owner);
  // A database that cannot answer is the server's failure (503, 500), never an empty list: a client
  // that believed it would forget its sessions.
  if (!rows) return rows.error();
  std::vector<SessionRow> out;
  for (auto& r : rows.value()) {
    // Another node's kernel keeps its sessions; a session whose kernel is gone everywhere goes.
    if (!kernels_.kernels().count(r.kernel_id)) {
      auto elsewhere = cluster_.held_elsewhere(r.kernel_id);
      if (!elsewhere) return elsewhere.error();
      if (elsewhere.value()) {
        out.push_back(std::move(r));
        continue;
      }
      (void)state::delete_session(db_, r.id);
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

common::Result<std::optional<SessionRow>> SessionsApi::visible(const gateway::Caller& caller, const std::string& id) {
  auto all = visible_sessions(caller);
  if (!all) return all.error();
  for (auto& s : all.value())
    if (s.id == id) return std::optional<SessionRow>(std::move(s));
  return std::optional<SessionRow>();
}

nlohmann::json SessionsApi::model(const gateway::Caller& caller, const SessionRow& s) {
  nlohmann::json m = {{"id", s.id}, {"path", s.path}, {"name", s.name}, {"type", s.type}, {"kernel", nullptr}};
  if (auto hub = kernels_.find(s.kernel_id, caller.user)) m["kernel"] = kernels_.model(*hub);
  else if (auto remote = cluster_.remote_model(s.kernel_id, caller.user)) m["kernel"] = std::move(*remote);
  // Deprecated but still read by older clients (jupyter_server keeps it for type "notebook").
  if (s.type == "notebook") m["notebook"] = {{"path", s.path}, {"name", s.name}};
  return m;
}

awaitable<http::Reply> SessionsApi::list(Call& call) {
  auto sessions = visible_sessions(call.caller);
  if (!sessions) co_return reply(http::error_response(call.req, sessions.error()));
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : sessions.value()) list.push_back(model(call.caller, s));
  co_return reply(http::json_response(call.req, http::status::ok, list));
}

awaitable<http::Reply> SessionsApi::create(Call& call) {
  const http::Request& req = call.req;
  auto body = object_body(req);
  if (!body) co_return bad_request(req, "request body must be a JSON object");
  SessionRow rec;
  if (!optional_string(*body, "path", rec.path) || !optional_string(*body, "name", rec.name) ||
      !optional_string(*body, "type", rec.type))
    co_return bad_request(req, "path, name and type must be strings");
  if (rec.path.empty()) co_return bad_request(req, "session path missing");
  auto ref = kernel_ref(*body);
  if (!ref) co_return reply(http::error_response(req, ref.error()));
  auto sessions = visible_sessions(call.caller);
  if (!sessions) co_return reply(http::error_response(req, sessions.error()));
  size_t own = 0;
  for (const auto& s : sessions.value()) {
    if (s.owner == call.caller.user.name) ++own;
    if (s.path == rec.path && s.owner == call.caller.user.name) {
      // jupyter_server returns the existing session for the same path.
      http::Response res = http::json_response(req, http::status::created, model(call.caller, s));
      res.set(http::field::location, base_url_ + "api/sessions/" + s.id);
      co_return reply(std::move(res));
    }
  }
  // Each row is the user's to pay for: past the cap, a new one is refused (the user's own are theirs to end).
  if (max_per_user_ > 0 && own >= static_cast<size_t>(max_per_user_))
    co_return reply(http::json_response(
        req, http::status::too_many_requests,
        {{"reason", "Too Many Requests"},
         {"message", "Resource Limit: max_sessions_per_user (" + std::to_string(max_per_user_) + ") sessions for user " +
                         call.caller.user.name + "; delete one first"}}));
  if (!ref->id.empty()) {
    if (!kernels_.find(ref->id, call.caller.user) && !cluster_.remote_model(ref->id, call.caller.user))
      co_return reply(http::error_response(req, Errc::kNotFound, "Kernel does not exist: " + ref->id));
    rec.kernel_id = ref->id;
  } else {
    // A named argument: GCC 12 can destroy a temporary in a co_await operand twice.
    gateway::KernelManager::StartOptions start{ref->name, ref->env, "", false, nullptr, true, nullptr, std::nullopt, ""};
    // In a cluster the whole request goes to the node placement picks: the session's row is shared,
    // and its kernel model comes from the node holding the kernel.
    if (auto elsewhere = co_await cluster_.place(call, start)) co_return std::move(*elsewhere);
    const std::string placed = start.placed_id;
    auto hub = co_await kernels_.start(call.caller.user, std::move(start));
    if (!hub) {
      if (!placed.empty()) cluster_.unplace(placed);
      // jupyter_server answers a missing kernelspec with 501.
      if (hub.error().code == Errc::kNotFound)
        co_return reply(http::json_response(req, http::status::not_implemented,
                                            {{"reason", "Not Implemented"},
                                             {"message", hub.error().message},
                                             {"short_message", "Kernel not found"}}));
      co_return reply(http::error_response(req, hub.error()));
    }
    rec.kernel_id = hub.value()->kernel().id();
  }
  rec.id = common::random_uuid();
  rec.owner = call.caller.user.name;
  if (auto st = state::insert_session(db_, rec); !st) co_return reply(http::error_response(req, st.error()));
  http::Response res = http::json_response(req, http::status::created, model(call.caller, rec));
  res.set(http::field::location, base_url_ + "api/sessions/" + rec.id);
  co_return reply(std::move(res));
}

awaitable<http::Reply> SessionsApi::get(Call& call) {
  co_return reply(http::json_response(call.req, http::status::ok, model(call.caller, *call.session)));
}

awaitable<http::Reply> SessionsApi::remove(Call& call) {
  std::string kernel_id = call.session->kernel_id;
  // In a cluster the node holding the kernel deletes the session and shuts the kernel down.
  if (auto elsewhere = co_await cluster_.forward_for_kernel(call, kernel_id)) co_return std::move(*elsewhere);
  (void)state::delete_session(db_, call.session->id);
  co_await kernels_.remove(kernel_id, call.caller.user.name);
  co_return reply(http::empty_response(call.req));
}

awaitable<http::Reply> SessionsApi::update(Call& call) {
  const http::Request& req = call.req;
  auto body = object_body(req);
  if (!body) co_return bad_request(req, "request body must be a JSON object");
  const SessionRow& s = *call.session;
  SessionRow updated = s;
  if (!optional_string(*body, "path", updated.path) || !optional_string(*body, "name", updated.name) ||
      !optional_string(*body, "type", updated.type))
    co_return bad_request(req, "path, name and type must be strings");
  auto ref = kernel_ref(*body);
  if (!ref) co_return reply(http::error_response(req, ref.error()));
  if (!ref->id.empty()) {
    if (!kernels_.find(ref->id, call.caller.user) && !cluster_.remote_model(ref->id, call.caller.user))
      co_return reply(http::error_response(req, Errc::kNotFound, "Kernel does not exist: " + ref->id));
    updated.kernel_id = ref->id;
  } else if (!ref->name.empty()) {
    gateway::KernelManager::StartOptions start{ref->name, ref->env, "", false, nullptr, true, nullptr, std::nullopt, ""};
    auto hub = co_await kernels_.start(call.caller.user, std::move(start));
    if (!hub) co_return reply(http::error_response(req, hub.error()));
    updated.kernel_id = hub.value()->kernel().id();
  }
  if (auto st = state::update_session(db_, updated); !st) co_return reply(http::error_response(req, st.error()));
  // jupyter_server shuts down the kernel a session was moved away from.
  if (updated.kernel_id != s.kernel_id) {
    std::string old_kernel = s.kernel_id;
    co_await kernels_.remove(old_kernel, call.caller.user.name);
  }
  co_return reply(http::json_response(req, http::status::ok, model(call.caller, updated)));
}

}  // namespace cellgate::api
