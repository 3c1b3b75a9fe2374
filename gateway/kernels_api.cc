// SPDX-License-Identifier: BSD-3-Clause
// kernels_api: /api/kernels, /api/kernelspecs and /kernelspecs/{name}/{file}.
#include <fstream>
#include <sstream>

#include "gateway/gateway.h"
#include "protocol/json_text.h"

namespace cellgate::gateway {

using boost::asio::awaitable;
using common::Errc;

namespace {

// Parses a JSON object body; an empty body is {}.
common::Result<nlohmann::json> parse_body(const Request& req) {
  if (req.body().empty()) return nlohmann::json::object();
  auto j = protocol::parse_untrusted_json(req.body());
  if (j.is_discarded()) return common::make_error(Errc::kBadRequest, "request body is not valid JSON (or nests too deeply)");
  if (!j.is_object()) return common::make_error(Errc::kBadRequest, "request body must be a JSON object");
  return j;
}

std::string content_type_for(const std::string& file) {
  auto ends = [&](const char* ext) { return file.size() >= strlen(ext) && file.compare(file.size() - strlen(ext), strlen(ext), ext) == 0; };
  if (ends(".png")) return "image/png";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".js")) return "application/javascript";
  if (ends(".css")) return "text/css";
  return "application/octet-stream";
}

// Counts a REST call on a kernel for as long as it runs (the idle pauser leaves the kernel alone).
struct InFlight {
  explicit InFlight(KernelHub& h) : hub(h) { ++hub.requests_in_flight; }
  ~InFlight() { --hub.requests_in_flight; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  KernelHub& hub;
};

}  // namespace

awaitable<Response> handle_kernels(Gateway& gw, Request& req, const Caller& caller,
                                   const std::vector<std::string>& parts) {
  const auto method = req.method();
  if (parts.size() == 2) {
    if (method == http::verb::get) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& [id, hub] : gw.kernels())
        if (caller.sees(*hub)) list.push_back(gw.kernel_model(*hub));
      co_return json_response(req, http::status::ok, list);
    }
    if (method != http::verb::post) co_return method_not_allowed(req);
    auto body = parse_body(req);
    if (!body) co_return error_response(req, body.error());
    Gateway::StartOptions opts;
    if (auto n = body->find("name"); n != body->end() && !n->is_null()) {
      if (!n->is_string()) co_return error_response(req, Errc::kBadRequest, "name must be a string");
      opts.name = n->get<std::string>();
    }
    if (auto e = body->find("env"); e != body->end()) opts.env = *e;
    if (auto w = body->find("workspace"); w != body->end() && !w->is_null()) {
      if (!w->is_string()) co_return error_response(req, Errc::kBadRequest, "workspace must be a string");
      opts.workspace = w->get<std::string>();
    }
    if (auto e = body->find("ephemeral"); e != body->end() && !e->is_null()) {
      if (!e->is_boolean()) co_return error_response(req, Errc::kBadRequest, "ephemeral must be a boolean");
      opts.ephemeral = e->get<bool>();
    }
    auto seed_failure = std::make_shared<SeedFailure>();
    opts.seed_failure = seed_failure;
    auto hub = co_await gw.start_kernel(caller, std::move(opts));
    if (!hub) {
      Response res = error_response(req, hub.error());
      if (!seed_failure->notebook.empty()) {
        // Which seed cell failed and how, for clients that want more than the message.
        auto error_body = nlohmann::json::parse(res.body());
        error_body["seed"] = seed_failure->to_json();
        res.body() = error_body.dump();
        res.prepare_payload();
      }
      co_return res;
    }
    Response res = json_response(req, http::status::created, gw.kernel_model(*hub.value()));
    res.set(http::field::location, gw.config().base_url + "api/kernels/" + hub.value()->kernel().id());
    co_return res;
  }
  auto hub = gw.find_kernel(parts[2], caller);
  if (!hub) co_return error_response(req, Errc::kNotFound, "Kernel does not exist: " + parts[2]);
  if (parts.size() >= 4) {
    // interrupt, restart, execute, tools: a paused kernel is thawed before anything reaches it (its
    // messages would thaw it too, but tools/process joins the jail's frozen cgroup directly).
    hub->kernel().touch();
    hub->kernel().resume();
  }
  if (parts.size() == 3) {
    if (method == http::verb::get) co_return json_response(req, http::status::ok, gw.kernel_model(*hub));
    if (method == http::verb::delete_) {
      co_await gw.delete_kernel(parts[2], caller.user.name);
      co_return empty_response(req);
    }
    co_return method_not_allowed(req);
  }
  if (parts.size() == 4 && parts[3] == "interrupt") {
    if (method != http::verb::post) co_return method_not_allowed(req);
    if (hub->kernel().state() == launcher::KernelState::kDead)
      co_return error_response(req, Errc::kConflict, "kernel is dead: " + hub->kernel().reason());
    co_await hub->kernel().interrupt();
    co_return empty_response(req);
  }
  if (parts.size() == 4 && parts[3] == "restart") {
    if (method != http::verb::post) co_return method_not_allowed(req);
    auto st = co_await hub->kernel().restart();
    gw.audit(caller, "restart", "kernel", parts[2], nlohmann::json::object(), st.has_value());
    if (!st) co_return error_response(req, Errc::kInternal, "restart failed: " + st.error().message);
    co_return json_response(req, http::status::ok, gw.kernel_model(*hub));
  }
  if (parts.size() == 4 && parts[3] == "execute") {
    if (method != http::verb::post) co_return method_not_allowed(req);
    InFlight guard(*hub);
    co_return co_await handle_execute(gw, req, caller, parts[2]);
  }
  if (parts.size() == 5 && parts[3] == "tools") {
    if (method != http::verb::post) co_return method_not_allowed(req);
    InFlight guard(*hub);
    co_return co_await handle_tools(gw, req, caller, hub, parts[4]);
  }
  if (parts.size() == 4 && parts[3] == "channels")
    co_return error_response(req, Errc::kBadRequest, "WebSocket upgrade required");
  co_return error_response(req, Errc::kNotFound, "not found");
}

awaitable<Response> handle_kernelspecs(Gateway& gw, Request& req, const std::vector<std::string>& parts) {
  if (req.method() != http::verb::get && req.method() != http::verb::head) co_return method_not_allowed(req);
  auto specs = gw.kernelspecs();
  const std::string& base = gw.config().base_url;
  if (parts[0] == "kernelspecs") {
    // Resources: only the files the spec lists (logos, kernel.js, kernel.css); never a path.
    if (parts.size() != 3) co_return error_response(req, Errc::kNotFound, "not found");
    auto spec = specs.find(parts[1]);
    if (spec == specs.end()) co_return error_response(req, Errc::kNotFound, "No such kernelspec " + parts[1]);
    const auto& res_list = spec->second.resources;
    if (std::find(res_list.begin(), res_list.end(), parts[2]) == res_list.end())
      co_return error_response(req, Errc::kNotFound, "No such resource " + parts[2]);
    std::ifstream in(spec->second.dir + "/" + parts[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    Response res{http::status::ok, req.version()};
    res.set(http::field::content_type, content_type_for(parts[2]));
    res.set(http::field::cache_control, "max-age=3600");
    res.keep_alive(req.keep_alive());
    res.body() = ss.str();
    res.prepare_payload();
    co_return res;
  }
  if (parts.size() == 2) {
    nlohmann::json all = nlohmann::json::object();
    for (const auto& [name, spec] : specs) all[name] = launcher::kernelspec_model(spec, base);
    std::string def = gw.config().default_kernel;
    if (!specs.count(def) && !specs.empty()) def = specs.begin()->first;
    co_return json_response(req, http::status::ok, {{"default", def}, {"kernelspecs", all}});
  }
  if (parts.size() == 3) {
    auto spec = specs.find(parts[2]);
    if (spec == specs.end()) co_return error_response(req, Errc::kNotFound, "Kernel spec " + parts[2] + " not found");
    co_return json_response(req, http::status::ok, launcher::kernelspec_model(spec->second, base));
  }
  co_return error_response(req, Errc::kNotFound, "not found");
}

}  // namespace cellgate::gateway
