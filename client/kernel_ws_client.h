// SPDX-License-Identifier: BSD-3-Clause
// kernel_ws_client: a client of a kernel's channels WebSocket (/api/kernels/{id}/channels) speaking the
// legacy JSON protocol, as JupyterLab does. Blocking calls, each bounded by a deadline; used by
// `cellgate run` on its own thread (never on the io thread of a gateway it talks to).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "client/http_client.h"

namespace cellgate::client {

struct KernelMessage {
  std::string channel;  // shell, iopub, control, stdin
  std::string msg_type;
  std::string parent_id;  // parent_header.msg_id ("" when none)
  nlohmann::json content;
  nlohmann::json metadata;
  std::size_t bytes = 0;  // size of the frame it came in
};

class KernelWsClient {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kMaxMessageBytes = 64u << 20;

  // Opens the WebSocket with `Authorization: token T` and a fresh session_id. kUnavailable when the
  // gateway cannot be reached or refuses the upgrade.
  static common::Result<std::unique_ptr<KernelWsClient>> connect(const BaseUrl& url, const std::string& token,
                                                               const std::string& kernel_id,
                                                               std::chrono::seconds timeout);
  ~KernelWsClient();

  // Sends a request on channel; returns its msg_id.
  common::Result<std::string> send(const std::string& channel, const std::string& msg_type, nlohmann::json content,
                                   Clock::time_point deadline);
  // The next message; kTimeout when none arrives by the deadline (the socket is then closed for good).
  common::Result<KernelMessage> read(Clock::time_point deadline);

 private:
  struct Impl;
  explicit KernelWsClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cellgate::client
