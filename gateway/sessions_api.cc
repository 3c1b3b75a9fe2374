// SPDX-License-Identifier: BSD-3-Clause
// sessions_api: /api/sessions with jupyter_server's session model, kept in the state database.
#include "common/random.h"
#include "gateway/gateway.h"
#include "protocol/json_text.h"
#include "state/kernel_records.h"

namespace cellgate::gateway {

using boost::asio::awaitable;
using common::Errc;
using state::SessionRow;

namespace {

nlohmann::json session_model(Gateway& gw, const Caller& caller, const SessionRow& s) {
  nlohmann::json m = {{"id", s.id}, {"path", s.path}, {"name", s.name}, {"type", s.type}, {"kernel", nullptr}};
  if (auto hub = gw.find_kernel(s.kernel_id, caller)) m["kernel"] = gw.kernel_model(*hub);
  // Deprecated but still read by older clients (jupyter_server keeps it for type "notebook").
  if (s.type == "notebook") m["notebook"] = {{"path", s.path}, {"name", s.name}};
  return m;
}

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

// The caller's sessions (an admin's are everyone's); rows whose kernel is gone are dropped, as
// jupyter_server drops them on read.
std::vector<SessionRow> visible_sessions(Gateway& gw, const Caller& caller) {
  std::optional<std::string> owner;
  if (!caller.user.admin) owner = caller.user.name;
  auto rows = state::list_sessions(gw.db(), owner);
  std::vector<SessionRow> out;
  if (!rows) return out;
  for (auto& r : rows.value()) {
    if (!gw.kernels().count(r.kernel_id)) {
      (void)state::delete_session(gw.db(), r.id);
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

awaitable<Response> handle_sessions(Gateway& gw, Request& req, const Caller& caller,
                                    const std::vector<std::string>& parts) {
  const auto method = req.method();
  nlohmann::json body = nlohmann::json::object();
  if (method == http::verb::post || method == http::verb::patch) {
    if (!req.body().empty()) body = protocol::parse_untrusted_json(req.body());
    if (body.is_discarded() || !body.is_object())
      co_return error_response(req, Errc::kBadRequest, "request body must be a JSON object");
  }
  auto sessions = visible_sessions(gw, caller);
  if (parts.size() == 2) {
    if (method == http::verb::get) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& s : sessions) list.push_back(session_model(gw, caller, s));
      co_return json_response(req, http::status::ok, list);
    }
    if (method != http::verb::post) co_return error_response(req, Errc::kBadRequest, "unsupported method on /api/sessions");
    SessionRow rec;
    if (!optional_string(body, "path", rec.path) || !optional_string(body, "name", rec.name) ||
        !optional_string(body, "type", rec.type))
      co_return error_response(req, Errc::kBadRequest, "path, name and type must be strings");
    if (rec.path.empty()) co_return error_response(req, Errc::kBadRequest, "session path missing");
    auto ref = kernel_ref(body);
    if (!ref) co_return error_response(req, ref.error());
    for (const auto& s : sessions) {
      if (s.path == rec.path && s.owner == caller.user.name) {
        // jupyter_server returns the existing session for the same path.
        Response res = json_response(req, http::status::created, session_model(gw, caller, s));
        res.set(http::field::location, gw.config().base_url + "api/sessions/" + s.id);
        co_return res;
      }
    }
    if (!ref->id.empty()) {
      if (!gw.find_kernel(ref->id, caller)) co_return error_response(req, Errc::kNotFound, "Kernel does not exist: " + ref->id);
      rec.kernel_id = ref->id;
    } else {
      // A named argument: GCC 12 can destroy a temporary in a co_await operand twice.
      Gateway::StartOptions start{ref->name, ref->env, "", false, nullptr, true, nullptr};
      auto hub = co_await gw.start_kernel(caller, std::move(start));
      if (!hub) {
        // jupyter_server answers a missing kernelspec with 501.
        if (hub.error().code == Errc::kNotFound)
          co_return json_response(req, http::status::not_implemented,
                                  {{"reason", "Not Implemented"},
                                   {"message", hub.error().message},
                                   {"short_message", "Kernel not found"}});
        co_return error_response(req, hub.error());
      }
      rec.kernel_id = hub.value()->kernel().id();
    }
    rec.id = common::random_uuid();
    rec.owner = caller.user.name;
    if (auto st = state::insert_session(gw.db(), rec); !st) co_return error_response(req, st.error());
    Response res = json_response(req, http::status::created, session_model(gw, caller, rec));
    res.set(http::field::location, gw.config().base_url + "api/sessions/" + rec.id);
    co_return res;
  }
  if (parts.size() != 3) co_return error_response(req, Errc::kNotFound, "not found");
  auto found = std::find_if(sessions.begin(), sessions.end(), [&](const SessionRow& s) { return s.id == parts[2]; });
  if (found == sessions.end()) co_return error_response(req, Errc::kNotFound, "Session not found: " + parts[2]);
  SessionRow s = *found;
  if (method == http::verb::get) co_return json_response(req, http::status::ok, session_model(gw, caller, s));
  if (method == http::verb::delete_) {
    (void)state::delete_session(gw.db(), s.id);
    co_await gw.delete_kernel(s.kernel_id, caller.user.name);
    co_return empty_response(req);
  }
  if (method != http::verb::patch) co_return error_response(req, Errc::kBadRequest, "unsupported method");
  SessionRow updated = s;
  if (!optional_string(body, "path", updated.path) || !optional_string(body, "name", updated.name) ||
      !optional_string(body, "type", updated.type))
    co_return error_response(req, Errc::kBadRequest, "path, name and type must be strings");
  auto ref = kernel_ref(body);
  if (!ref) co_return error_response(req, ref.error());
  if (!ref->id.empty()) {
    if (!gw.find_kernel(ref->id, caller)) co_return error_response(req, Errc::kNotFound, "Kernel does not exist: " + ref->id);
    updated.kernel_id = ref->id;
  } else if (!ref->name.empty()) {
    Gateway::StartOptions start{ref->name, ref->env, "", false, nullptr, true, nullptr};
    auto hub = co_await gw.start_kernel(caller, std::move(start));
    if (!hub) co_return error_response(req, hub.error());
    updated.kernel_id = hub.value()->kernel().id();
  }
  if (auto st = state::update_session(gw.db(), updated); !st) co_return error_response(req, st.error());
  // jupyter_server shuts down the kernel a session was moved away from.
  if (updated.kernel_id != s.kernel_id) co_await gw.delete_kernel(s.kernel_id, caller.user.name);
  co_return json_response(req, http::status::ok, session_model(gw, caller, updated));
}

}  // namespace cellgate::gateway
