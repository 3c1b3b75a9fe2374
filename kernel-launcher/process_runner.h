// SPDX-License-Identifier: BSD-3-Clause
// process_runner: run one command to completion with bounded output, optional stdin and a deadline.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "common/result.h"

namespace cellgate::launcher {

struct ProcessRun {
  std::vector<std::string> argv;            // argv[0] resolved against env's PATH when it has no '/'
  std::map<std::string, std::string> env;   // the complete environment
  std::string cwd;
  std::string stdin_data;
  std::chrono::milliseconds timeout{30000};
  size_t max_output = 1 << 20;              // per stream; the rest is read and dropped
};

struct ProcessOutcome {
  int exit_code = -1;   // 128+signal when killed by a signal
  std::string stdout_data;
  std::string stderr_data;
  bool timed_out = false;
  bool truncated = false;
};

// Io thread. Spawns argv in its own session, feeds stdin, collects both outputs up to max_output, and on
// timeout sends SIGTERM, then SIGKILL after a second. Errors only when it cannot start (kInternal).
boost::asio::awaitable<common::Result<ProcessOutcome>> run_process(ProcessRun run);

}  // namespace cellgate::launcher
