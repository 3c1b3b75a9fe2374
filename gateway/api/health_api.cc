// SPDX-License-Identifier: BSD-3-Clause
// health_api: GET /healthz (the process answers) and GET /readyz (it can serve), for load balancers.
#include "gateway/api/health_api.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "gateway/database_call.h"
#include "gateway/gateway.h"
#include "gateway/jail_probe.h"
#include "gateway/node_membership.h"
#include "gateway/offload.h"
#include "state/database.h"

namespace cellgate::api {

boost::asio::awaitable<http::Reply> HealthApi::healthz(Call& call) {
  co_return reply(http::json_response(call.req, http::status::ok, {{"status", "ok"}}));
}

boost::asio::awaitable<std::string> HealthApi::jail_failure() {
  constexpr auto kEvery = std::chrono::seconds(60);
  const auto now = std::chrono::steady_clock::now();
  if (!probing_ && (!probed_at_ || now - *probed_at_ >= kEvery)) {
    probing_ = true;
    gateway::JailProbeOptions options;
    options.helper = gw_.config().jail_helper;
    options.policy = gw_.config().jail_policy;
    // A lambda that captures by reference: GCC 12 may destroy a temporary in a co_await operand
    // twice, which a captured std::string would not survive.
    auto st = co_await gw_.offload().run([&options] { return gateway::probe_jail(options); });
    probe_failure_ = st ? "" : st.error().message;
    probed_at_ = std::chrono::steady_clock::now();
    probing_ = false;
  }
  co_return probe_failure_;
}

boost::asio::awaitable<std::string> HealthApi::first_failure() {
  const auto& config = gw_.config();
  // A database that stopped answering keeps its probe's statement until that statement's deadline (12 s):
  // meanwhile the next probes say so at once rather than queue more behind it.
  if (db_probing_->exchange(true)) co_return "the database does not answer";
  const state::DatabaseThread::Work ping = [probing = db_probing_](state::Database& db) {
    auto st = db.exec("SELECT 1");
    probing->store(false);
    return st;
  };
  const std::string tenant = "readyz";
  auto answered = co_await gateway::on_database_thread(gw_.db_thread(), tenant, ping, std::chrono::seconds(2));
  if (!answered && answered.error().code == common::Errc::kTooManyRequests) db_probing_->store(false);
  if (!answered) co_return "the database does not answer";
  // A cluster node that cannot renew its lease serves none of its kernels (gateway/lease_fence.h).
  if (auto* m = gw_.membership(); m && !m->fence()->holds()) co_return "the node cannot renew its cluster lease";
  const std::string store = gw_.workspaces().store().dir();
  if (::access(store.c_str(), W_OK | X_OK) != 0) co_return "the snapshot store " + store + " is not writable";
  if (config.spawner == "jail") {
    if (::access(config.jail_helper.c_str(), X_OK) != 0) co_return "the jail helper " + config.jail_helper + " cannot run";
    struct stat st {};
    const std::string zygote = config.runtime_dir + "/zygote.sock";
    if (config.fork_server && (::stat(zygote.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)))
      co_return "the fork server is not listening";
    co_return co_await jail_failure();
  }
  co_return "";
}

boost::asio::awaitable<http::Reply> HealthApi::readyz(Call& call) {
  std::string failure = co_await first_failure();
  if (failure != last_failure_) {  // a public route: log changes, not every probe
    if (failure.empty()) common::log_info("msg=\"ready\"");
    else common::log_warn("msg=\"not ready\" why=\"{}\"", failure);
    last_failure_ = failure;
  }
  const bool ready = failure.empty();
  co_return reply(http::json_response(call.req, ready ? http::status::ok : http::status::service_unavailable,
                                      {{"status", ready ? "ready" : "unavailable"}}));
}

}  // namespace cellgate::api
