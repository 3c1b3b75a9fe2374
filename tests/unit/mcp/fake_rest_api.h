// SPDX-License-Identifier: BSD-3-Clause
// fake_rest_api: a scripted client::RestApi for the MCP unit tests (records calls, answers by "METHOD path").
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "client/rest.h"

namespace cellgate::mcp::testing {

class FakeRestApi : public client::RestApi {
 public:
  struct Seen {
    client::RestCall call;
    std::string token;
  };
  // The reply for "METHOD path"; unscripted calls get 404 {"reason","message"}.
  void on(const std::string& key, int status, nlohmann::json body) { replies_[key] = client::RestReply{status, std::move(body)}; }
  // Every call fails at the transport level with this message.
  void unreachable(std::string message) { unreachable_ = std::move(message); }

  common::Result<client::RestReply> call(const client::RestCall& call, const std::string& token) override {
    std::lock_guard lock(mu_);
    seen_.push_back({call, token});
    if (!unreachable_.empty()) return common::make_error(common::Errc::kUnavailable, unreachable_);
    auto it = replies_.find(call.method + " " + call.path);
    if (it == replies_.end()) return client::RestReply{404, {{"reason", "Not Found"}, {"message", "no route " + call.path}}};
    return it->second;
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, client::RestReply> replies_;
  std::vector<Seen> seen_;
  std::string unreachable_;
};

}  // namespace cellgate::mcp::testing
