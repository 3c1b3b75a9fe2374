// SPDX-License-Identifier: BSD-3-Clause
// tools_api: the sandbox tools agent platforms expose, scoped to one kernel's workspace and jail:
// POST /api/kernels/{kernel}/tools/{read,write,edit,exec,process}.
#pragma once

#include <cstddef>
#include <string>

#include "gateway/api/route.h"

namespace cellgate::gateway {
class Audit;
class KernelHub;
class Offload;
}  // namespace cellgate::gateway

namespace cellgate::api {

struct ToolsOptions {
  size_t output_limit = 1 << 20;  // exec's outputs and process's stdout/stderr, each
  bool jailed = true;             // process runs in the kernel's jail (cellgate-jail --join)
  std::string jail_helper;       // its --join applies the policy the kernel's jail recorded
};

class ToolsApi {
 public:
  ToolsApi(gateway::Offload& offload, gateway::Audit& audit, ToolsOptions options)
      : offload_(offload), audit_(audit), options_(std::move(options)) {}
  // {"path", "offset"?, "limit"?} (lines) → {content, total_lines, truncated}; binary files as base64.
  boost::asio::awaitable<http::Reply> read(Call& call);
  // {"path", "content"}; parent directories are created.
  boost::asio::awaitable<http::Reply> write(Call& call);
  // {"path", "old_string", "new_string", "replace_all"?} or {"path", "diff"}; 409 when it does not apply.
  boost::asio::awaitable<http::Reply> edit(Call& call);
  // As POST .../execute.
  boost::asio::awaitable<http::Reply> exec(Call& call);
  // {"command", "args"?, "timeout"?, "stdin"?} → {exit_code, stdout, stderr, timed_out, truncated}.
  boost::asio::awaitable<http::Reply> process(Call& call);

 private:
  // One tool call's inputs, checked by with_kernel.
  struct ToolCall {
    const http::Request& req;
    const std::shared_ptr<gateway::KernelHub>& hub;
    const nlohmann::json& body;
    const std::string& path;  // "" for exec and process
    const std::string& user;
  };
  using Body = boost::asio::awaitable<http::Reply> (ToolsApi::*)(const ToolCall&);
  boost::asio::awaitable<http::Reply> with_kernel(Call& call, Body tool, bool needs_path);
  boost::asio::awaitable<http::Reply> read_tool(const ToolCall& tc);
  boost::asio::awaitable<http::Reply> write_tool(const ToolCall& tc);
  boost::asio::awaitable<http::Reply> edit_tool(const ToolCall& tc);
  boost::asio::awaitable<http::Reply> exec_tool(const ToolCall& tc);
  boost::asio::awaitable<http::Reply> process_tool(const ToolCall& tc);

  gateway::Offload& offload_;
  gateway::Audit& audit_;
  ToolsOptions options_;
};

}  // namespace cellgate::api
