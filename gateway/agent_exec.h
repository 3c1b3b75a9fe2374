// SPDX-License-Identifier: BSD-3-Clause
// agent_exec: execute code on a kernel and collect one structured result (POST /api/kernels/{id}/execute).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "journal/entry.h"

namespace cellgate::gateway {

class KernelHub;

struct ExecRequest {
  std::string code;
  double timeout_s = 0;                     // 0 = none (the per-execute limit of the config applies)
  std::map<std::string, std::string> env;   // set around this execution only (python kernels)
  size_t output_limit = 1 << 20;            // bytes of outputs kept; the rest is cut and marked
  bool store_history = true;                // false: the kernel keeps no In/Out entry (notebook-http)
  bool stop_on_error = true;                // false: an error does not make the kernel abort what comes next
  journal::Origin origin{"", journal::client::kExecute, ""};  // who the journal says ran it
};

// Parses and validates the JSON body {"code", "timeout"?, "env"?}. kBadRequest on anything malformed.
common::Result<ExecRequest> parse_exec_request(const std::string& body, size_t output_limit);

// Runs the code and resolves to {status: ok|error|timeout|dead, execution_count, outputs[], duration_ms,
// truncated}. Streams with the same name are merged. On timeout the cell is interrupted; if the interrupt
// does not take within a few seconds, the kernel is restarted. When on_output is given, every output is
// passed to it as it arrives (for NDJSON streaming). Io thread only.
boost::asio::awaitable<nlohmann::json> run_execute(std::shared_ptr<KernelHub> hub, ExecRequest request,
                                                   std::function<void(const nlohmann::json&)> on_output = {});

// Runs code silently (no outputs to clients, no history, no execution count) and waits for its reply:
// kTimeout without one in time, kUnavailable when the kernel aborted it (it drops execute requests for
// a while after an error), kInternal when it died or answered an error. Io thread only.
boost::asio::awaitable<common::Status> run_silent(std::shared_ptr<KernelHub> hub, std::string code,
                                                 std::chrono::milliseconds timeout);

// Runs code as the gateway's own cell, for code whose failure matters in any language (a warm-pool
// claim): not silent, since IRkernel answers a failing silent execute "ok"; no history; its outputs seen
// by no client (KernelHub Watch::hidden). Errors as run_silent's, and kInternal when the kernel published
// an error, whatever its reply said.
boost::asio::awaitable<common::Status> run_hidden(std::shared_ptr<KernelHub> hub, std::string code,
                                                 std::chrono::milliseconds timeout);

}  // namespace cellgate::gateway
