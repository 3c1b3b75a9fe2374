// SPDX-License-Identifier: BSD-3-Clause
// fork_server: supervises cellgate-zygote, the preloaded fork server ipykernels start from: starts it,
// restarts it a while after it dies (kernels start cold meanwhile), stops it with the gateway.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "kernel-launcher/exit_watch.h"
#include "kernel-launcher/spawner.h"

namespace cellgate::gateway {

// Io thread only. The kernels it forked do not depend on it: they outlive it.
class ForkServer {
 public:
  ForkServer(boost::asio::io_context& io, std::string binary, std::string runtime_dir,
             std::chrono::milliseconds restart_delay = std::chrono::seconds(5));
  ~ForkServer();  // stops it
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // Starts it in a session of its own (a fork server left by an earlier gateway is replaced: the new
  // one renames its socket over the old one's). False when it cannot be started; kernels start cold.
  bool start();
  // SIGTERM (it removes its socket and exits), reaped within a second; no restart after this.
  void stop();
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return process_.pid; }

 private:
  void watch();

  boost::asio::io_context& io_;
  std::string binary_;
  std::string socket_;
  std::string log_;
  std::chrono::milliseconds restart_delay_;
  launcher::ProcessHandle process_;  // pid -1: none
  std::unique_ptr<launcher::ExitWatch> watch_;
  boost::asio::steady_timer restart_;
  bool stopped_ = false;
};

}  // namespace cellgate::gateway
