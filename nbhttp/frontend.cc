// SPDX-License-Identifier: BSD-3-Clause
// frontend: Kernel Gateway's notebook-http personality as the gateway's HTTP front end.
#include "nbhttp/frontend.h"

#include <filesystem>

#include <fmt/core.h>

#include "common/config_error.h"
#include "common/log.h"
#include "gateway/agent_exec.h"
#include "gateway/auth.h"
#include "gateway/gateway.h"
#include "gateway/kernel_manager.h"
#include "kernel-launcher/language_literal.h"
#include "kernel-launcher/notebook_file.h"
#include "nbhttp/kernel_lender.h"
#include "protocol/json_text.h"

namespace cellgate::nbhttp {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using gateway::KernelHub;
using nlohmann::json;

namespace {

// Lends a kernel for the scope of one request, whatever way the request ends.
struct Lease {
  KernelLender& lender;
  std::shared_ptr<KernelHub> hub;
  ~Lease() { lender.release(hub); }
};

// One step of a request (REQUEST, the cell, ResponseInfo), within what is left of the request's time.
awaitable<json> run_step(std::shared_ptr<KernelHub> hub, std::string code, std::chrono::steady_clock::time_point deadline,
                         size_t output_limit) {
  gateway::ExecRequest r;
  r.code = std::move(code);
  r.output_limit = output_limit;
  r.store_history = false;  // a long-lived service kernel must not keep every request in Out
  // Steps run one at a time and a failed one ends the request, so ipykernel's abort-after-error has
  // nothing to protect; with it, the next request leased this kernel could arrive while the kernel
  // still aborts (stop_on_error_timeout) and fail as "aborted" for an error that was not its own.
  r.stop_on_error = false;
  r.timeout_s = std::max(0.001, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
  r.origin = journal::Origin{"", journal::client::kNotebookHttp, ""};
  co_return co_await gateway::run_execute(hub, std::move(r));
}

std::string stdout_text(const json& result) {
  std::string out;
  for (const auto& o : result["outputs"])
    if (o.value("type", "") == "stream" && o.value("name", "") == "stdout") out += o.value("text", "");
  return out;
}

// KG's precedence: stdout, else the execute_result's MIME bundle as JSON, else nothing.
std::string response_text(const json& result) {
  std::string out = stdout_text(result);
  if (!out.empty()) return out;
  for (const auto& o : result["outputs"])
    if (o.value("type", "") == "execute_result") return o["data"].dump(-1, ' ', false, json::error_handler_t::replace);
  return out;
}

// A step that did not end "ok", as the HTTP error the client gets; nullopt when it did.
std::optional<http::Response> step_error(const http::Request& req, const json& result, int timeout_s, size_t limit) {
  const std::string status = result.value("status", "error");
  if (status == "ok") {
    if (!result.value("truncated", false)) return std::nullopt;
    return http::error_response(req, Errc::kInternal, fmt::format("the cell's output is larger than {} bytes", limit));
  }
  if (status == "timeout")
    return http::error_response(req, Errc::kTimeout, fmt::format("the request's cells did not finish within {} s", timeout_s));
  if (status == "dead")
    return http::error_response(req, Errc::kUnavailable, "the kernel died: " + result.value("reason", std::string()));
  std::string ename = "Error", evalue;
  for (const auto& o : result["outputs"]) {
    if (o.value("type", "") == "error") {
      ename = o.value("ename", "Error");
      evalue = o.value("evalue", "");
    }
  }
  http::Response res = http::json_response(req, http::status::internal_server_error,
                               {{"reason", "Internal Server Error"},
                                {"message", fmt::format("Error {}: {}", ename, evalue)},
                                {"ename", ename},
                                {"evalue", evalue}});
  return res;
}

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Applies a ResponseInfo cell's {"status", "headers"}; an error message when it is not usable.
std::optional<std::string> apply_response_info(const std::string& printed, http::Response& res) {
  auto info = protocol::parse_untrusted_json(printed);
  if (!info.is_object()) return "the ResponseInfo cell did not answer a JSON object";
  if (auto h = info.find("headers"); h != info.end() && !h->is_null()) {
    if (!h->is_object()) return "ResponseInfo headers must be an object";
    for (const auto& [name, value] : h->items()) {
      std::string v = value.is_string() ? value.get<std::string>() : value.dump();
      if (name.empty() || !std::all_of(name.begin(), name.end(), token_char))
        return "ResponseInfo header name is not valid: " + name;
      if (v.find_first_of("\r\n", 0) != std::string::npos || v.find('\0') != std::string::npos)
        return "ResponseInfo header value is not valid for " + name;
      // Framing is ours: a cell must not be able to desynchronise the connection.
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "content-length" || lower == "transfer-encoding" || lower == "connection") continue;
      res.set(name, v);
    }
  }
  if (auto s = info.find("status"); s != info.end() && !s->is_null()) {
    if (!s->is_number_integer() || s->get<int>() < 100 || s->get<int>() > 599)
      return "ResponseInfo status must be an integer in [100, 599]";
    res.result(static_cast<unsigned>(s->get<int>()));
  }
  return std::nullopt;
}

}  // namespace

Frontend::Frontend(gateway::Gateway& gw) : gw_(gw), cors_(gw.config().allow_origins) {
  const gateway::Config& config = gw.config();
  const auto specs = gw.kernels().kernelspecs();
  auto nb = launcher::load_notebook(config.notebook_http);
  if (!nb) throw common::ConfigError("--notebook-http: " + nb.error().message);
  kernel_name_ = config.notebook_http_kernel;
  if (kernel_name_.empty()) kernel_name_ = nb->kernel_name();
  if (kernel_name_.empty()) kernel_name_ = config.default_kernel;
  auto spec = specs.find(kernel_name_);
  if (spec == specs.end()) throw common::ConfigError("--notebook-http: no kernelspec named " + kernel_name_);
  language_ = nb->language();
  if (language_.empty()) language_ = spec->second.language;
  if (!launcher::has_string_literal(language_)) {
    std::string known;
    for (const auto& l : launcher::literal_languages()) known += (known.empty() ? "" : ", ") + l;
    throw common::ConfigError("--notebook-http: cellgate cannot pass REQUEST to a " + language_ +
                              " kernel as data (no string literal checked with its parser); it can for " + known);
  }
  const std::string prefix = comment_prefix_for(language_);
  std::vector<std::string> sources;
  for (const auto& cell : nb->code_cells()) sources.push_back(cell.source);
  endpoints_ = collect_endpoints(sources, prefix);
  if (endpoints_.empty())
    throw common::ConfigError("--notebook-http: no endpoints were discovered in " + config.notebook_http +
                      "; annotate cells like '" + prefix + " GET /path'");
  seed_ = gateway::make_seed(nb.value(), std::filesystem::path(config.notebook_http).filename().string(),
                    [&](const std::string& src) { return !parse_annotation(src, prefix); });
  for (const auto& e : endpoints_) {
    std::string verbs;
    for (const auto& [verb, src] : e.sources) verbs += (verbs.empty() ? "" : ",") + verb;
    common::log_info("msg=\"notebook-http endpoint\" path={} methods={}", e.path, verbs);
  }
}

Frontend::~Frontend() = default;

awaitable<common::Status> Frontend::start() {
  const gateway::Config& config = gw_.config();
  gateway::KernelManager::StartOptions opts;
  opts.name = kernel_name_;
  opts.ephemeral = true;  // each kernel gets a workspace of its own, removed with it
  opts.seed = seed_;
  opts.snapshots = false;
  state::User owner{gateway::KernelManager::kNotebookHttpOwner, false, {}, "", false};
  kernels_ = std::make_unique<KernelLender>(gw_.io(), gw_.kernels(), std::move(owner), std::move(opts),
                                            config.notebook_http_kernels, config.notebook_http_queue);
  co_return co_await kernels_->start();
}

awaitable<void> Frontend::stop() {
  if (kernels_) co_await kernels_->stop();
  // A replacement that was starting while the lender stopped is nobody's either.
  std::vector<std::string> left;
  for (const auto& [id, hub] : gw_.kernels().kernels())
    if (hub->owner == gateway::KernelManager::kNotebookHttpOwner) left.push_back(id);
  for (const auto& id : left) co_await gw_.kernels().remove(id, "notebook-http");
}

awaitable<http::Reply> Frontend::handle(http::Request req, http::Peer peer) {
  http::Reply reply;
  http::Response& res = reply.res;
  try {
    bool allowed = gw_.config().notebook_http_public;
    if (!allowed && req.method() != http::verb::options) {
      auto caller = co_await gw_.auth().authenticate(req, peer, res);
      allowed = caller.has_value();
    }
    if (req.method() == http::verb::options) {
      res = cors_.preflight(req);
    } else if (allowed) {
      std::string_view path = http::target_path(std::string_view(req.target().data(), req.target().size()));
      const std::string& base = gw_.config().base_url;
      std::string rel(path.starts_with(base) ? path.substr(base.size() - 1) : "");
      if (rel.empty()) res = http::error_response(req, Errc::kNotFound, "not found");
      else res = co_await serve(req, std::move(rel));
    }
  } catch (const std::exception& e) {
    common::log_error("method={} msg=\"unexpected error\" error=\"{}\"", std::string(req.method_string()), e.what());
    res = http::error_response(req, Errc::kInternal, "internal error");
  }
  cors_.add_headers(req, res);
  res.set(http::field::server, "cellgate");
  co_return reply;
}

awaitable<http::Upgrade> Frontend::upgrade(http::Request& req, http::Peer peer) {
  http::Response refusal;
  auto caller = co_await gw_.auth().authenticate(req, peer, refusal);
  if (!caller) co_return refusal;
  if (!cors_.allowed(req)) co_return http::error_response(req, Errc::kForbidden, "origin not allowed");
  co_return http::error_response(req, Errc::kNotFound, "no WebSocket here");
}

awaitable<http::Response> Frontend::serve(http::Request& req, std::string path) {
  std::map<std::string, std::string> params;
  const Endpoint* ep = find_endpoint(endpoints_, path, params);
  if (!ep) co_return http::error_response(req, Errc::kNotFound, "no endpoint at " + path);
  const std::string verb(req.method_string());
  auto source = ep->sources.find(verb);
  if (source == ep->sources.end()) {
    std::string allow;
    for (const auto& [v, src] : ep->sources) allow += (allow.empty() ? "" : ", ") + v;
    http::Response res = http::method_not_allowed(req, verb + " is not served at " + ep->path);
    res.set(http::field::allow, allow);
    co_return res;
  }
  if (!kernels_) co_return http::error_response(req, Errc::kUnavailable, "the kernels are not started yet");
  const int timeout_s = gw_.config().notebook_http_timeout_s;
  const size_t limit = gw_.config().execute_output_bytes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  auto hub = co_await kernels_->acquire(deadline);
  if (!hub) co_return http::error_response(req, hub.error());
  Lease lease{*kernels_, hub.value()};

  // Arguments are named first: GCC 12 can destroy temporaries in a co_await operand twice.
  std::shared_ptr<KernelHub> kernel = lease.hub;
  auto statement = request_statement(request_bundle(req, params, !gw_.config().notebook_http_public), language_);
  if (!statement) co_return http::error_response(req, Errc::kInternal, "REQUEST cannot be written for " + language_);
  std::string assign = std::move(*statement);
  auto assigned = co_await run_step(kernel, std::move(assign), deadline, limit);
  if (auto err = step_error(req, assigned, timeout_s, limit)) co_return std::move(*err);
  std::string cell = source->second;
  auto result = co_await run_step(kernel, std::move(cell), deadline, limit);
  if (auto err = step_error(req, result, timeout_s, limit)) co_return std::move(*err);

  http::Response res{http::status::ok, req.version()};
  res.set(http::field::content_type, "text/plain");
  if (auto info_src = ep->response_sources.find(verb); info_src != ep->response_sources.end()) {
    std::string info_cell = info_src->second;
    auto info = co_await run_step(kernel, std::move(info_cell), deadline, limit);
    if (auto err = step_error(req, info, timeout_s, limit)) co_return std::move(*err);
    // As in KG, what the cell answers (stdout, else its execute_result) is parsed.
    if (auto bad = apply_response_info(response_text(info), res)) co_return http::error_response(req, Errc::kInternal, *bad);
  }
  res.keep_alive(req.keep_alive());
  res.body() = response_text(result);
  res.prepare_payload();
  co_return res;
}

}  // namespace cellgate::nbhttp
