// SPDX-License-Identifier: BSD-3-Clause
// sessions_api: /api/sessions with jupyter_server's session model.
#include "gateway/gateway.h"

namespace cellgate::gateway {

using boost::asio::awaitable;
using common::Errc;

namespace {

nlohmann::json session_model(Gateway& gw, const SessionRecord& s) {
  nlohmann::json m = {{"id", s.id}, {"path", s.path}, {"name", s.name}, {"type", s.type}, {"kernel", nullptr}};
  if (auto hub = gw.find_kernel(s.kernel_id)) m["kernel"] = gw.kernel_model(*hub);
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

}  // namespace

awaitable<Response> handle_sessions(Gateway& gw, Request& req, const std::vector<std::string>& parts) {
  auto& store = gw.sessions();
  const auto method = req.method();
  // Sessions whose kernel is gone are gone too (jupyter_server drops them on read).
  for (auto* s : store.list())
    if (!gw.find_kernel(s->kernel_id)) store.remove(s->id);

  nlohmann::json body = nlohmann::json::object();
  if (method == http::verb::post || method == http::verb::patch) {
    if (!req.body().empty()) body = nlohmann::json::parse(req.body(), nullptr, false);
    if (body.is_discarded() || !body.is_object())
      co_return error_response(req, Errc::kBadRequest, "request body must be a JSON object");
  }
  if (parts.size() == 2) {
    if (method == http::verb::get) {
      nlohmann::json list = nlohmann::json::array();
      for (auto* s : store.list()) list.push_back(session_model(gw, *s));
      co_return json_response(req, http::status::ok, list);
    }
    if (method != http::verb::post)
      co_return error_response(req, Errc::kBadRequest, "unsupported method on /api/sessions");
    SessionRecord rec;
    if (!optional_string(body, "path", rec.path) || !optional_string(body, "name", rec.name) ||
        !optional_string(body, "type", rec.type))
      co_return error_response(req, Errc::kBadRequest, "path, name and type must be strings");
    if (rec.path.empty()) co_return error_response(req, Errc::kBadRequest, "session path missing");
    auto ref = kernel_ref(body);
    if (!ref) co_return error_response(req, ref.error());
    const SessionRecord* existing = store.find_by_path(rec.path);
    if (!existing) {
      if (!ref->id.empty()) {
        if (!gw.find_kernel(ref->id)) co_return error_response(req, Errc::kNotFound, "Kernel does not exist: " + ref->id);
        rec.kernel_id = ref->id;
      } else {
        // A named argument: GCC 12 can destroy a temporary in a co_await operand twice.
        Gateway::StartOptions start{ref->name, ref->env};
        auto hub = co_await gw.start_kernel(std::move(start));
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
      existing = &store.create(std::move(rec));
    }
    Response res = json_response(req, http::status::created, session_model(gw, *existing));
    res.set(http::field::location, gw.config().base_url + "api/sessions/" + existing->id);
    co_return res;
  }
  if (parts.size() != 3) co_return error_response(req, Errc::kNotFound, "not found");
  SessionRecord* s = store.find(parts[2]);
  if (!s) co_return error_response(req, Errc::kNotFound, "Session not found: " + parts[2]);
  if (method == http::verb::get) co_return json_response(req, http::status::ok, session_model(gw, *s));
  if (method == http::verb::delete_) {
    std::string kid = s->kernel_id;
    store.remove(s->id);
    co_await gw.delete_kernel(kid);
    co_return empty_response(req);
  }
  if (method != http::verb::patch) co_return error_response(req, Errc::kBadRequest, "unsupported method");
  SessionRecord updated = *s;
  if (!optional_string(body, "path", updated.path) || !optional_string(body, "name", updated.name) ||
      !optional_string(body, "type", updated.type))
    co_return error_response(req, Errc::kBadRequest, "path, name and type must be strings");
  auto ref = kernel_ref(body);
  if (!ref) co_return error_response(req, ref.error());
  std::string old_kernel = updated.kernel_id;
  if (!ref->id.empty()) {
    if (!gw.find_kernel(ref->id)) co_return error_response(req, Errc::kNotFound, "Kernel does not exist: " + ref->id);
    updated.kernel_id = ref->id;
  } else if (!ref->name.empty()) {
    // A named argument: GCC 12 can destroy a temporary in a co_await operand twice.
        Gateway::StartOptions start{ref->name, ref->env};
        auto hub = co_await gw.start_kernel(std::move(start));
    if (!hub) co_return error_response(req, hub.error());
    updated.kernel_id = hub.value()->kernel().id();
  }
  s = store.find(parts[2]);  // the store may have changed while the kernel started
  if (!s) co_return error_response(req, Errc::kNotFound, "Session not found: " + parts[2]);
  *s = updated;
  // jupyter_server shuts down the kernel a session was moved away from.
  if (updated.kernel_id != old_kernel) co_await gw.delete_kernel(old_kernel);
  co_return json_response(req, http::status::ok, session_model(gw, *store.find(parts[2])));
}

}  // namespace cellgate::gateway
