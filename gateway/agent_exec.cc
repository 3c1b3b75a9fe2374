// SPDX-License-Identifier: BSD-3-Clause
// agent_exec: execute code on a kernel and collect one structured result.
#include "gateway/agent_exec.h"

#include <algorithm>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/random.h"
#include "gateway/exec_collector.h"
#include "gateway/kernel_hub.h"
#include "protocol/json_text.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using launcher::Channel;
using launcher::KernelState;
using nlohmann::json;

namespace {

constexpr auto kInterruptGrace = std::chrono::seconds(5);

std::string py_string(const std::string& s) { return json(s).dump(); }  // a JSON string is a Python literal

// Our interrupt made a cell fail, and with stop_on_error ipykernel then aborts every execute request
// until its queue has drained (kernelbase._abort_queues, after stop_on_error_timeout): waits that out
// with empty silent executes (bounded, ~5 s), so the env restore and the caller's next cell are not
// aborted for an error that was ours.
asio::awaitable<void> wait_out_abort(std::shared_ptr<KernelHub> hub) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  auto delay = std::chrono::milliseconds(10);
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto st = co_await run_silent(hub, "", std::chrono::seconds(5));
    if (st || st.error().code != common::Errc::kUnavailable) co_return;
    pause.expires_after(delay);
    boost::system::error_code ec;
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    delay = std::min(delay * 2, std::chrono::milliseconds(1000));
  }
}

// Runs code with silent=True and waits (bounded) for its reply; the journal says the gateway ran it
// for user.
asio::awaitable<void> silent_exec(const std::shared_ptr<KernelHub>& hub, const std::string& code, std::string user) {
  std::string msg_id;
  auto msg = make_execute_request(code, /*silent=*/true, /*store_history=*/false, msg_id);
  auto c = std::make_shared<ExecCollector>(co_await asio::this_coro::executor, 1 << 16, nullptr);
  if (hub->send_watched(Channel::kShell, msg, msg_id, c,
                        {.origin = journal::Origin{std::move(user), journal::client::kGateway, ""}}))
    co_await c->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  hub->unwatch(msg_id);
}

}  // namespace

namespace {

// The callers' parameters outlive this coroutine (they await it), so it borrows them.
asio::awaitable<common::Status> run_own_cell(const std::shared_ptr<KernelHub>& hub, const std::string& code,
                                            std::chrono::milliseconds timeout, bool silent) {
  auto msg = protocol::make_message(
      "execute_request", "cellgate-" + common::random_hex(8),
      json{{"code", code}, {"silent", silent}, {"store_history", false}, {"user_expressions", json::object()},
           {"allow_stdin", false}, {"stop_on_error", false}}
          .dump());
  auto header = protocol::peek_header(msg.header);
  const std::string msg_id = header ? header->msg_id : "";
  auto c = std::make_shared<ExecCollector>(co_await asio::this_coro::executor, 1 << 16, nullptr);
  if (!hub->send_watched(Channel::kShell, msg, msg_id, c, {.now = false, .hidden = !silent})) {
    hub->unwatch(msg_id);
    co_return common::make_error(common::Errc::kInternal, "kernel channels are closed");
  }
  co_await c->wait_until(std::chrono::steady_clock::now() + timeout);
  hub->unwatch(msg_id);
  if (c->died_) co_return common::make_error(common::Errc::kInternal, "kernel died: " + c->death_reason_);
  if (!c->got_reply_) co_return common::make_error(common::Errc::kTimeout, "no execute_reply in time");
  if (c->reply_status_ == "aborted")
    co_return common::make_error(common::Errc::kUnavailable, "the kernel aborted it (it drops requests after an error)");
  if (c->reply_status_ != "ok" || c->saw_error_) {
    std::string why = c->reply_status_ != "ok" ? "the kernel answered " + c->reply_status_ : "the kernel published an error";
    if (!c->ename_.empty()) why += ": " + c->ename_ + ": " + c->evalue_;
    co_return common::make_error(common::Errc::kInternal, why);
  }
  co_return common::ok();
}

}  // namespace

asio::awaitable<common::Status> run_silent(std::shared_ptr<KernelHub> hub, std::string code,
                                          std::chrono::milliseconds timeout) {
  co_return co_await run_own_cell(hub, code, timeout, /*silent=*/true);
}

asio::awaitable<common::Status> run_hidden(std::shared_ptr<KernelHub> hub, std::string code,
                                          std::chrono::milliseconds timeout) {
  co_return co_await run_own_cell(hub, code, timeout, /*silent=*/false);
}

common::Result<ExecRequest> parse_exec_request(const std::string& body, size_t output_limit) {
  using common::Errc;
  auto j = protocol::parse_untrusted_json(body);
  if (j.is_discarded() || !j.is_object()) return common::make_error(Errc::kBadRequest, "body must be a JSON object");
  ExecRequest r;
  r.output_limit = output_limit;
  auto code = j.find("code");
  if (code == j.end() || !code->is_string()) return common::make_error(Errc::kBadRequest, "code must be a string");
  r.code = *code;
  if (auto t = j.find("timeout"); t != j.end() && !t->is_null()) {
    if (!t->is_number() || t->get<double>() <= 0 || t->get<double>() > 86400)
      return common::make_error(Errc::kBadRequest, "timeout must be a number of seconds in (0, 86400]");
    r.timeout_s = *t;
  }
  if (auto e = j.find("env"); e != j.end() && !e->is_null()) {
    if (!e->is_object()) return common::make_error(Errc::kBadRequest, "env must be an object of strings");
    for (const auto& [k, v] : e->items()) {
      if (!v.is_string()) return common::make_error(Errc::kBadRequest, "env." + k + " must be a string");
      // What os.environ refuses would fail the silent set-up cell, and the code would run without its env.
      if (k.empty() || k.find_first_of(std::string_view("=\0", 2)) != std::string::npos ||
          v.get_ref<const std::string&>().find('\0') != std::string::npos)
        return common::make_error(Errc::kBadRequest, "env names must be non-empty without '=' or NUL, values without NUL");
      r.env[k] = v;
    }
  }
  return r;
}

asio::awaitable<json> run_execute(std::shared_ptr<KernelHub> hub, ExecRequest request,
                                  std::function<void(const json&)> on_output) {
  auto& kernel = hub->kernel();
  const auto started = std::chrono::steady_clock::now();
  // The owner's execution limit (--exec-timeout, or the user's own) holds on every path that runs
  // code through here (/execute, tools/exec, MCP, notebook-http), whatever the request asks for.
  if (const auto limit = static_cast<double>(hub->execute_limit().count());
      limit > 0 && (request.timeout_s <= 0 || request.timeout_s > limit))
    request.timeout_s = limit;
  auto result = [&](const std::string& status, const ExecCollector* c) {
    json r = {{"status", status},
              {"execution_count", c ? c->count_ : json()},
              {"outputs", c ? c->outputs_ : json::array()},
              {"duration_ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count()},
              {"truncated", c ? c->truncated_ : false}};
    if (c && c->died_) r["reason"] = c->death_reason_;
    if (c && !c->workspace_.is_null()) r["workspace"] = c->workspace_;
    return r;
  };
  if (kernel.state() == KernelState::kDead) {
    json r = result("dead", nullptr);
    r["reason"] = kernel.reason();
    co_return r;
  }
  if (!request.env.empty()) {
    // Set the variables for this cell only (silent executes leave no trace in the notebook's outputs).
    json env(request.env);
    const std::string set_env = "import os as __cg_os, json as __cg_json\n__cg_env = __cg_json.loads(" +
                                py_string(env.dump()) +
                                ")\n__cg_saved = {k: __cg_os.environ.get(k) for k in __cg_env}\n"
                                "__cg_os.environ.update(__cg_env)\n";
    co_await silent_exec(hub, set_env, request.origin.user);
  }
  const std::string& code = request.code;
  std::string msg_id;
  auto msg = make_execute_request(code, /*silent=*/false, request.store_history, msg_id, request.stop_on_error);
  auto collector = std::make_shared<ExecCollector>(co_await asio::this_coro::executor, request.output_limit, on_output);
  if (!hub->send_watched(Channel::kShell, msg, msg_id, collector, {.origin = request.origin})) {
    hub->unwatch(msg_id);
    json r = result("dead", nullptr);
    r["reason"] = "kernel channels are closed (" + std::string(launcher::to_string(kernel.state())) + ")";
    co_return r;
  }
  auto deadline = request.timeout_s > 0
                      ? started + std::chrono::microseconds(static_cast<long long>(request.timeout_s * 1e6))
                      : std::chrono::steady_clock::time_point::max();
  co_await collector->wait_until(deadline);
  std::string status;
  if (collector->died_) {
    status = "dead";
  } else if (!collector->done()) {
    status = "timeout";
    co_await kernel.interrupt();
    co_await collector->wait_until(std::chrono::steady_clock::now() + kInterruptGrace);
    if (!collector->done()) {
      // The interrupt did not take (a C extension spinning without checking signals): restart.
      hub->unwatch(msg_id);
      co_await kernel.restart();
      json r = result("timeout", collector.get());
      r["message"] = "execution timed out; the interrupt did not take, so the kernel was restarted (memory lost)";
      co_return r;
    }
    if (request.stop_on_error) co_await wait_out_abort(hub);
  } else {
    status = collector->reply_status_ == "ok" ? "ok" : "error";
  }
  hub->unwatch(msg_id);
  if (!request.env.empty() && status != "dead") {
    const std::string restore_env = "for __cg_k, __cg_v in __cg_saved.items():\n"
                                    "    if __cg_v is None: __cg_os.environ.pop(__cg_k, None)\n"
                                    "    else: __cg_os.environ[__cg_k] = __cg_v\n";
    co_await silent_exec(hub, restore_env, request.origin.user);
  }
  json r = result(status, collector.get());
  if (status == "timeout") r["message"] = "execution timed out after " + std::to_string(request.timeout_s) + " s; the cell was interrupted";
  if (status == "error" && collector->reply_status_ == "aborted")
    r["message"] = "the kernel aborted this request without running it (a kernel drops the requests queued behind a cell that failed or was interrupted)";
  co_return r;
}

}  // namespace cellgate::gateway
