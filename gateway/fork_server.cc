// SPDX-License-Identifier: BSD-3-Clause
// fork_server: supervises cellgate-zygote.
#include "gateway/fork_server.h"

#include <signal.h>
#include <unistd.h>

#include "common/log.h"
#include "kernel-launcher/spawn_util.h"

namespace cellgate::gateway {

ForkServer::ForkServer(boost::asio::io_context& io, std::string binary, std::string runtime_dir,
                       std::chrono::milliseconds restart_delay)
    : io_(io), binary_(std::move(binary)), socket_(runtime_dir + "/zygote.sock"), log_(runtime_dir + "/zygote.log"),
      restart_delay_(restart_delay), restart_(io) {}

ForkServer::~ForkServer() { stop(); }

bool ForkServer::start() {
  if (stopped_) return false;
  if (::access(binary_.c_str(), X_OK) != 0) {
    common::log_warn("msg=\"fork server not found; kernels start cold\" path={}", binary_);
    return false;
  }
  // Its own session (spawn_process), so it is not tied to our terminal. Until it has preloaded (a few
  // seconds), and whenever it is gone, kernels start cold.
  auto z = launcher::spawn_process({binary_, "--socket", socket_, "--parent-pid", std::to_string(::getpid())},
                                   {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, "/", log_, -1);
  if (!z) {
    common::log_warn("msg=\"fork server did not start; kernels start cold\" error=\"{}\"", z.error().message);
    return false;
  }
  process_ = std::move(z.value());
  common::log_info("msg=\"fork server starting\" pid={} socket={}", process_.pid, socket_);
  watch();
  return true;
}

void ForkServer::watch() {
  watch_ = std::make_unique<launcher::ExitWatch>(io_.get_executor(), process_.pidfd.get());
  watch_->async_wait([this] {
    if (process_.pid <= 0) return;  // we are stopping it
    int status = launcher::reap(process_);
    common::log_warn("msg=\"fork server exited; kernels start cold until it is back\" pid={} status=\"{}\"", process_.pid,
                     launcher::describe_wait_status(status));
    process_.pid = -1;
    restart_.expires_after(restart_delay_);
    restart_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) start();
    });
  });
}

void ForkServer::stop() {
  stopped_ = true;
  restart_.cancel();
  if (process_.pid <= 0) return;
  ::kill(process_.pid, SIGTERM);  // it removes its socket and exits; the kernels it forked stay
  for (int i = 0; i < 100 && launcher::reap(process_) < 0; ++i) ::usleep(10000);
  process_.pid = -1;
  if (watch_) watch_->cancel();
}

}  // namespace cellgate::gateway
