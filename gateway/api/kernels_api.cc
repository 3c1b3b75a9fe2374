// SPDX-License-Identifier: BSD-3-Clause
// kernels_api: /api/kernels.
#include "gateway/api/kernels_api.h"

#include <cstdlib>

#include "common/log.h"
#include "gateway/api/cluster_routing.h"
#include "gateway/kernel_manager.h"
#include "protocol/json_text.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;

void wake(gateway::KernelHub& hub) {
  hub.kernel().touch();
  hub.kernel().resume();
}

InFlight::InFlight(std::shared_ptr<gateway::KernelHub> hub) : hub_(std::move(hub)) { ++hub_->requests_in_flight; }
InFlight::~InFlight() { --hub_->requests_in_flight; }

common::Result<nlohmann::json> parse_object_body(const http::Request& req) {
  if (req.body().empty()) return nlohmann::json::object();
  auto j = protocol::parse_untrusted_json(req.body());
  if (j.is_discarded()) return common::make_error(Errc::kBadRequest, "request body is not valid JSON (or nests too deeply)");
  if (!j.is_object()) return common::make_error(Errc::kBadRequest, "request body must be a JSON object");
  return j;
}

awaitable<http::Reply> KernelsApi::list(Call& call) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [id, hub] : kernels_.kernels())
    if (gateway::visible_to(*hub, call.caller.user)) list.push_back(kernels_.model(*hub));
  // In a cluster, the other nodes' kernels too: the list is the table's.
  auto remote = co_await cluster_.remote_models(call.caller.user);
  if (!remote) co_return reply(http::error_response(call.req, remote.error()));
  for (auto& m : remote.value()) list.push_back(std::move(m));
  co_return reply(http::json_response(call.req, http::status::ok, list));
}

awaitable<http::Reply> KernelsApi::start(Call& call) {
  const http::Request& req = call.req;
  auto body = parse_object_body(req);
  if (!body) co_return reply(http::error_response(req, body.error()));
  gateway::KernelManager::StartOptions opts;
  if (auto n = body->find("name"); n != body->end() && !n->is_null()) {
    if (!n->is_string()) co_return reply(http::error_response(req, Errc::kBadRequest, "name must be a string"));
    opts.name = n->get<std::string>();
  }
  if (auto e = body->find("env"); e != body->end()) opts.env = *e;
  if (auto w = body->find("workspace"); w != body->end() && !w->is_null()) {
    if (!w->is_string()) co_return reply(http::error_response(req, Errc::kBadRequest, "workspace must be a string"));
    opts.workspace = w->get<std::string>();
  }
  if (auto e = body->find("ephemeral"); e != body->end() && !e->is_null()) {
    if (!e->is_boolean()) co_return reply(http::error_response(req, Errc::kBadRequest, "ephemeral must be a boolean"));
    opts.ephemeral = e->get<bool>();
  }
  if (auto n = body->find("network"); n != body->end() && !n->is_null()) opts.network = *n;
  auto seed_failure = std::make_shared<gateway::SeedFailure>();
  opts.seed_failure = seed_failure;
  // In a cluster, the node placement picks starts it; this one answers with what that node answered.
  if (auto elsewhere = co_await cluster_.place(call, opts)) co_return std::move(*elsewhere);
  const std::string placed = opts.placed_id;
  auto hub = co_await kernels_.start(call.caller.user, std::move(opts));
  if (!hub) {
    if (!placed.empty()) cluster_.unplace(placed);
    http::Response res = http::error_response(req, hub.error());
    if (!seed_failure->notebook.empty()) {
      // Which seed cell failed and how, for clients that want more than the message.
      auto error_body = nlohmann::json::parse(res.body());
      error_body["seed"] = seed_failure->to_json();
      res.body() = error_body.dump();
      res.prepare_payload();
    }
    co_return reply(std::move(res));
  }
  http::Response res = http::json_response(req, http::status::created, kernels_.model(*hub.value()));
  res.set(http::field::location, base_url_ + "api/kernels/" + hub.value()->kernel().id());
  co_return reply(std::move(res));
}

awaitable<http::Reply> KernelsApi::get(Call& call) {
  co_return reply(http::json_response(call.req, http::status::ok, kernels_.model(*call.kernel)));
}

awaitable<http::Reply> KernelsApi::egress(Call& call) {
  size_t recent = 100;
  if (std::string r = call.query("recent"); !r.empty()) {
    char* end = nullptr;
    unsigned long n = std::strtoul(r.c_str(), &end, 10);
    if (*end || r[0] == '-' || n > 256)
      co_return reply(http::error_response(call.req, Errc::kBadRequest, "recent must be an integer in [0, 256]"));
    recent = n;
  }
  auto stats = co_await kernels_.egress(call.kernel, recent);
  if (!stats) co_return reply(http::error_response(call.req, stats.error()));
  co_return reply(http::json_response(call.req, http::status::ok, stats.value()));
}

awaitable<http::Reply> KernelsApi::patch(Call& call) {
  auto body = parse_object_body(call.req);
  if (!body) co_return reply(http::error_response(call.req, body.error()));
  for (const auto& [key, value] : body->items()) {
    if (key != "network")
      co_return reply(http::error_response(call.req, Errc::kBadRequest, "only network may be changed on a running kernel, not " + key.substr(0, 64)));
  }
  auto network = body->find("network");
  if (network == body->end() || network->is_null())
    co_return reply(http::error_response(call.req, Errc::kBadRequest, "network is missing"));
  auto model = co_await kernels_.set_network(call.kernel, *network, call.caller.user.name);
  if (!model) co_return reply(http::error_response(call.req, model.error()));
  co_return reply(http::json_response(call.req, http::status::ok, model.value()));
}

awaitable<http::Reply> KernelsApi::remove(Call& call) {
  std::string id = call.kernel->kernel().id();
  co_await kernels_.remove(id, call.caller.user.name);
  co_return reply(http::empty_response(call.req));
}

awaitable<http::Reply> KernelsApi::interrupt(Call& call) {
  auto& kernel = call.kernel->kernel();
  wake(*call.kernel);
  if (kernel.state() == launcher::KernelState::kDead)
    co_return reply(http::error_response(call.req, Errc::kConflict, "kernel is dead: " + kernel.reason()));
  co_await kernel.interrupt();
  co_return reply(http::empty_response(call.req));
}

awaitable<http::Reply> KernelsApi::pause(Call& call) {
  auto& kernel = call.kernel->kernel();
  if (!kernel.paused()) {
    if (auto st = kernel.pause(); !st)
      co_return reply(http::error_response(call.req, Errc::kConflict, "cannot pause the kernel: " + st.error().message));
    common::log_info("kernel={} by={} msg=\"kernel paused\"", kernel.id(), call.caller.user.name);
  }
  co_return reply(http::json_response(call.req, http::status::ok, kernels_.model(*call.kernel)));
}

awaitable<http::Reply> KernelsApi::resume(Call& call) {
  auto& kernel = call.kernel->kernel();
  if (kernel.paused()) {
    wake(*call.kernel);
    common::log_info("kernel={} by={} msg=\"kernel resumed\"", kernel.id(), call.caller.user.name);
  }
  co_return reply(http::json_response(call.req, http::status::ok, kernels_.model(*call.kernel)));
}

awaitable<http::Reply> KernelsApi::restart(Call& call) {
  wake(*call.kernel);
  auto st = co_await kernels_.restart(call.kernel, call.caller.user.name);
  if (!st) {
    // Its turn refused (429: this user's own starts; 503: the gateway's) says so; anything else is ours.
    const Errc code = st.error().code == Errc::kTooManyRequests || st.error().code == Errc::kUnavailable
                          ? st.error().code
                          : Errc::kInternal;
    co_return reply(http::error_response(call.req, code, "restart failed: " + st.error().message));
  }
  co_return reply(http::json_response(call.req, http::status::ok, kernels_.model(*call.kernel)));
}

}  // namespace cellgate::api
