// SPDX-License-Identifier: BSD-3-Clause
// tools_api: the sandbox tools, scoped to one kernel's workspace and jail.
#include "gateway/api/tools_api.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "common/random.h"
#include "common/utf8.h"
#include "gateway/agent_exec.h"
#include "journal/entry.h"
#include "gateway/api/kernels_api.h"
#include "gateway/api/unified_diff.h"
#include "gateway/audit.h"
#include "gateway/kernel_hub.h"
#include "gateway/offload.h"
#include "kernel-launcher/jail_args.h"
#include "kernel-launcher/process_runner.h"
#include "protocol/json_text.h"
#include "workspace/file_api.h"

namespace cellgate::api {

using boost::asio::awaitable;
using common::Errc;
using nlohmann::json;

namespace {

constexpr size_t kDefaultReadLines = 2000;

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

bool get_string(const json& body, const char* key, std::string& out, bool required) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return !required;
  if (!it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}

// Creates the parent directories of path inside the workspace (never following symlinks).
common::Status make_parents(const workspace::FileApi& files, const std::string& path) {
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    auto st = files.make_dir(path.substr(0, slash));
    if (!st && st.error().code != Errc::kConflict) return st;
  }
  return common::ok();
}

// The JSON object body; null when it is not one.
json object_body(const http::Request& req) {
  auto body = protocol::parse_untrusted_json(req.body());
  return body.is_discarded() || !body.is_object() ? json() : body;
}

// The "path" of a read, write or edit, relative to /workspace ("/workspace/x" is taken as "x": agents
// see the jail's view). nullopt when missing, empty or not a string.
std::optional<std::string> tool_path(const json& body) {
  std::string path;
  if (!get_string(body, "path", path, true) || path.empty()) return std::nullopt;
  if (path.rfind("/workspace/", 0) == 0) path = path.substr(11);
  return path;
}

http::Reply bad_request(const http::Request& req, std::string message) {
  return reply(http::error_response(req, Errc::kBadRequest, std::move(message)));
}

constexpr const char* kNoObject = "body must be a JSON object";
constexpr const char* kNoPath = "path must be a non-empty string (relative to /workspace)";

}  // namespace

awaitable<http::Reply> ToolsApi::with_kernel(Call& call, Body tool, bool needs_path) {
  // Every tool: the kernel woken (a frozen jail's cgroup would hold a process joining it) and counted
  // busy for as long as the tool runs; the body a JSON object; read, write and edit name a path.
  wake(*call.kernel);
  InFlight guard(call.kernel);
  json body = object_body(call.req);
  if (body.is_null()) co_return bad_request(call.req, kNoObject);
  std::string path;
  if (needs_path) {
    auto named = tool_path(body);
    if (!named) co_return bad_request(call.req, kNoPath);
    path = std::move(*named);
  }
  // Named: GCC 12 can destroy a temporary in a co_await operand twice.
  const ToolCall args{call.req, call.kernel, body, path, call.caller.user.name};
  co_return co_await (this->*tool)(args);
}

awaitable<http::Reply> ToolsApi::read(Call& call) { return with_kernel(call, &ToolsApi::read_tool, true); }
awaitable<http::Reply> ToolsApi::write(Call& call) { return with_kernel(call, &ToolsApi::write_tool, true); }
awaitable<http::Reply> ToolsApi::edit(Call& call) { return with_kernel(call, &ToolsApi::edit_tool, true); }
awaitable<http::Reply> ToolsApi::exec(Call& call) { return with_kernel(call, &ToolsApi::exec_tool, false); }
awaitable<http::Reply> ToolsApi::process(Call& call) { return with_kernel(call, &ToolsApi::process_tool, false); }

awaitable<http::Reply> ToolsApi::read_tool(const ToolCall& tc) {
  const auto& [req, hub, body, path, user] = tc;
  workspace::FileApi files(hub->kernel().options().workspace_dir);
  size_t offset = 0, limit = kDefaultReadLines;
  if (auto o = body.find("offset"); o != body.end() && !o->is_null()) {
    if (!o->is_number_unsigned()) co_return reply(http::error_response(req, Errc::kBadRequest, "offset must be a line number >= 0"));
    offset = o->get<size_t>();
  }
  if (auto l = body.find("limit"); l != body.end() && !l->is_null()) {
    if (!l->is_number_unsigned() || l->get<size_t>() == 0) co_return reply(http::error_response(req, Errc::kBadRequest, "limit must be a positive number of lines"));
    limit = l->get<size_t>();
  }
  auto data = co_await offload_.run([&] { return files.read_file(path); });
  if (!data) co_return reply(http::error_response(req, data.error()));
  const std::string& text = data.value();
  if (text.find('\0') != std::string::npos || !common::valid_utf8(text))
    co_return reply(http::json_response(req, http::status::ok,
                            {{"path", path}, {"encoding", "base64"}, {"bytes", text.size()}, {"content", base64(text)}}));
  size_t line = 0, start = 0, total = 0, from = std::string::npos, to = text.size();
  // Saturated: offset and limit are the client's, and a wrapped sum would cut the range short.
  const size_t end_line = limit > SIZE_MAX - offset ? SIZE_MAX : offset + limit;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      if (i == text.size() && start == text.size()) break;
      if (line == offset) from = start;
      if (line == end_line) to = start;
      ++line;
      start = i + 1;
    }
  }
  total = line;
  std::string content = from == std::string::npos ? "" : text.substr(from, (to > from ? to - from : 0));
  co_return reply(http::json_response(req, http::status::ok,
                          {{"path", path}, {"content", content}, {"offset", offset},
                           {"lines", std::min(limit, total > offset ? total - offset : 0)},
                           {"total_lines", total}, {"truncated", end_line < total}}));
}

awaitable<http::Reply> ToolsApi::write_tool(const ToolCall& tc) {
  const auto& [req, hub, body, path, user] = tc;
  workspace::FileApi files(hub->kernel().options().workspace_dir);
  std::string content;
  if (!get_string(body, "content", content, true)) co_return reply(http::error_response(req, Errc::kBadRequest, "content must be a string"));
  auto st = co_await offload_.run([&]() -> common::Status {
    if (auto p = make_parents(files, path); !p) return p;
    return files.write_file(path, content);
  });
  if (!st) co_return reply(http::error_response(req, st.error()));
  co_return reply(http::json_response(req, http::status::ok, {{"path", path}, {"bytes", content.size()}}));
}

awaitable<http::Reply> ToolsApi::edit_tool(const ToolCall& tc) {
  const auto& [req, hub, body, path, user] = tc;
  workspace::FileApi files(hub->kernel().options().workspace_dir);
  std::string old_s, new_s, diff;
  bool has_diff = body.contains("diff");
  if (has_diff && !get_string(body, "diff", diff, true)) co_return reply(http::error_response(req, Errc::kBadRequest, "diff must be a string"));
  if (!has_diff && (!get_string(body, "old_string", old_s, true) || !get_string(body, "new_string", new_s, true)))
    co_return reply(http::error_response(req, Errc::kBadRequest, "give old_string and new_string (strings), or diff"));
  if (!has_diff && old_s.empty()) co_return reply(http::error_response(req, Errc::kBadRequest, "old_string must not be empty"));
  bool replace_all = body.contains("replace_all") && body["replace_all"].is_boolean() && body["replace_all"].get<bool>();
  auto result = co_await offload_.run([&]() -> common::Result<size_t> {
    auto data = files.read_file(path);
    if (!data) return data.error();
    std::string text = std::move(data.value());
    size_t count = 0;
    if (has_diff) {
      auto patched = apply_unified_diff(text, diff);
      if (!patched) return patched.error();
      text = std::move(patched.value());
      count = 1;
    } else {
      for (size_t p = text.find(old_s); p != std::string::npos; p = text.find(old_s, p + old_s.size())) ++count;
      if (count == 0) return common::make_error(Errc::kConflict, "old_string not found in " + path);
      if (count > 1 && !replace_all)
        return common::make_error(Errc::kConflict, "old_string occurs " + std::to_string(count) + " times in " + path +
                                                       "; give more context or set replace_all");
      std::string out;
      size_t last = 0;
      for (size_t p = text.find(old_s); p != std::string::npos; p = text.find(old_s, last)) {
        out.append(text, last, p - last).append(new_s);
        last = p + old_s.size();
      }
      out.append(text, last, std::string::npos);
      text = std::move(out);
    }
    if (auto st = files.write_file(path, text); !st) return st.error();
    return count;
  });
  if (!result) co_return reply(http::error_response(req, result.error()));
  co_return reply(http::json_response(req, http::status::ok, {{"path", path}, {"replacements", result.value()}}));
}

awaitable<http::Reply> ToolsApi::exec_tool(const ToolCall& tc) {
  const auto& [req, hub, body, path, user] = tc;
  auto exec = gateway::parse_exec_request(req.body(), options_.output_limit);
  if (!exec) co_return reply(http::error_response(req, exec.error()));
  auto said = req["X-Cellgate-Client"];
  exec->origin = journal::Origin{tc.user, journal::claimed_client(std::string_view(said.data(), said.size()), journal::client::kTools), ""};
  json result = co_await gateway::run_execute(hub, std::move(exec.value()));
  co_return reply(http::json_response(req, http::status::ok, result));
}

awaitable<http::Reply> ToolsApi::process_tool(const ToolCall& tc) {
  const auto& [req, hub, body, path, user] = tc;
  const std::string tree = hub->kernel().options().workspace_dir;
  std::string command, stdin_data;
  if (!get_string(body, "command", command, true) || command.empty())
    co_return reply(http::error_response(req, Errc::kBadRequest, "command must be a non-empty string"));
  if (!get_string(body, "stdin", stdin_data, false)) co_return reply(http::error_response(req, Errc::kBadRequest, "stdin must be a string"));
  std::vector<std::string> args;
  if (auto a = body.find("args"); a != body.end() && !a->is_null()) {
    if (!a->is_array()) co_return reply(http::error_response(req, Errc::kBadRequest, "args must be an array of strings"));
    for (const auto& v : *a) {
      if (!v.is_string()) co_return reply(http::error_response(req, Errc::kBadRequest, "args must be an array of strings"));
      args.push_back(v.get<std::string>());
    }
  }
  // execve takes C strings: a NUL would silently cut the command or an argument short.
  auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  if (has_nul(command) || std::any_of(args.begin(), args.end(), has_nul))
    co_return reply(http::error_response(req, Errc::kBadRequest, "command and args must not contain NUL"));
  double timeout = 30;
  if (auto t = body.find("timeout"); t != body.end() && !t->is_null()) {
    if (!t->is_number() || t->get<double>() <= 0 || t->get<double>() > 3600)
      co_return reply(http::error_response(req, Errc::kBadRequest, "timeout must be seconds in (0, 3600]"));
    timeout = t->get<double>();
  }
  if (hub->kernel().state() == launcher::KernelState::kDead)
    co_return reply(http::error_response(req, Errc::kConflict, "kernel is dead: " + hub->kernel().reason()));
  launcher::ProcessRun run;
  run.env = hub->kernel().options().env;
  run.stdin_data = std::move(stdin_data);
  run.timeout = std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
  run.max_output = options_.output_limit;
  std::string env_file;  // the kernel's environment for the join, never on a command line
  if (options_.jailed) {
    // Inside the kernel's own jail: same namespaces, cgroup, limits, user and the policy the jail
    // recorded (cellgate-jail --join).
    const std::string& status = hub->kernel().process().status_file;
    env_file = status.substr(0, status.rfind('/') + 1) + "join-env-" + common::random_hex(8);
    if (auto st = launcher::write_env_file(env_file, run.env); !st) co_return reply(http::error_response(req, st.error()));
    run.argv = {options_.jail_helper, "--join", status, "--env-file", env_file, "--"};
    run.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
  } else {
    run.cwd = tree;
  }
  run.argv.push_back(command);
  run.argv.insert(run.argv.end(), args.begin(), args.end());
  auto outcome = co_await launcher::run_process(std::move(run));
  if (!env_file.empty()) ::unlink(env_file.c_str());
  if (!outcome) co_return reply(http::error_response(req, outcome.error()));
  audit_.record(user, "process", "kernel", hub->kernel().id(), {{"command", command}, {"exit_code", outcome->exit_code}});
  co_return reply(http::json_response(req, http::status::ok,
                          {{"exit_code", outcome->exit_code}, {"stdout", outcome->stdout_data},
                           {"stderr", outcome->stderr_data}, {"timed_out", outcome->timed_out},
                           {"truncated", outcome->truncated}}));
}

}  // namespace cellgate::api
