// SPDX-License-Identifier: BSD-3-Clause
// tools_api: the sandbox tools agent platforms expose, scoped to one kernel's workspace and jail:
// POST /api/kernels/{id}/tools/{read,write,edit,exec,process}.
#include <algorithm>
#include <cstdint>

#include "common/utf8.h"
#include "gateway/agent_exec.h"
#include "gateway/gateway.h"
#include "gateway/unified_diff.h"
#include "kernel-launcher/process_runner.h"
#include "protocol/json_text.h"
#include "workspace/file_api.h"

namespace cellgate::gateway {

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

}  // namespace

awaitable<Response> handle_tools(Gateway& gw, Request& req, const Caller& caller, const std::shared_ptr<KernelHub>& hub,
                                 const std::string& tool) {
  auto body = protocol::parse_untrusted_json(req.body());
  if (body.is_discarded() || !body.is_object()) co_return error_response(req, Errc::kBadRequest, "body must be a JSON object");
  const std::string tree = hub->kernel().options().workspace_dir;
  workspace::FileApi files(tree);

  if (tool == "exec") {
    auto exec = parse_exec_request(req.body(), gw.config().execute_output_bytes);
    if (!exec) co_return error_response(req, exec.error());
    json result = co_await run_execute(hub, std::move(exec.value()));
    co_return json_response(req, http::status::ok, result);
  }
  std::string path;
  if (tool == "read" || tool == "write" || tool == "edit") {
    if (!get_string(body, "path", path, true) || path.empty())
      co_return error_response(req, Errc::kBadRequest, "path must be a non-empty string (relative to /workspace)");
    // Agents see the jail's view: accept /workspace/x as x.
    if (path.rfind("/workspace/", 0) == 0) path = path.substr(11);
  }
  if (tool == "read") {
    size_t offset = 0, limit = kDefaultReadLines;
    if (auto o = body.find("offset"); o != body.end() && !o->is_null()) {
      if (!o->is_number_unsigned()) co_return error_response(req, Errc::kBadRequest, "offset must be a line number >= 0");
      offset = o->get<size_t>();
    }
    if (auto l = body.find("limit"); l != body.end() && !l->is_null()) {
      if (!l->is_number_unsigned() || l->get<size_t>() == 0) co_return error_response(req, Errc::kBadRequest, "limit must be a positive number of lines");
      limit = l->get<size_t>();
    }
    auto data = co_await gw.offload([&] { return files.read_file(path); });
    if (!data) co_return error_response(req, data.error());
    const std::string& text = data.value();
    if (text.find('\0') != std::string::npos || !common::valid_utf8(text))
      co_return json_response(req, http::status::ok,
                              {{"path", path}, {"encoding", "base64"}, {"bytes", text.size()}, {"content", base64(text)}});
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
    co_return json_response(req, http::status::ok,
                            {{"path", path}, {"content", content}, {"offset", offset},
                             {"lines", std::min(limit, total > offset ? total - offset : 0)},
                             {"total_lines", total}, {"truncated", end_line < total}});
  }
  if (tool == "write") {
    std::string content;
    if (!get_string(body, "content", content, true)) co_return error_response(req, Errc::kBadRequest, "content must be a string");
    auto st = co_await gw.offload([&]() -> common::Status {
      if (auto p = make_parents(files, path); !p) return p;
      return files.write_file(path, content);
    });
    if (!st) co_return error_response(req, st.error());
    co_return json_response(req, http::status::ok, {{"path", path}, {"bytes", content.size()}});
  }
  if (tool == "edit") {
    std::string old_s, new_s, diff;
    bool has_diff = body.contains("diff");
    if (has_diff && !get_string(body, "diff", diff, true)) co_return error_response(req, Errc::kBadRequest, "diff must be a string");
    if (!has_diff && (!get_string(body, "old_string", old_s, true) || !get_string(body, "new_string", new_s, true)))
      co_return error_response(req, Errc::kBadRequest, "give old_string and new_string (strings), or diff");
    if (!has_diff && old_s.empty()) co_return error_response(req, Errc::kBadRequest, "old_string must not be empty");
    bool replace_all = body.contains("replace_all") && body["replace_all"].is_boolean() && body["replace_all"].get<bool>();
    auto result = co_await gw.offload([&]() -> common::Result<size_t> {
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
    if (!result) co_return error_response(req, result.error());
    co_return json_response(req, http::status::ok, {{"path", path}, {"replacements", result.value()}});
  }
  if (tool == "process") {
    std::string command, stdin_data;
    if (!get_string(body, "command", command, true) || command.empty())
      co_return error_response(req, Errc::kBadRequest, "command must be a non-empty string");
    if (!get_string(body, "stdin", stdin_data, false)) co_return error_response(req, Errc::kBadRequest, "stdin must be a string");
    std::vector<std::string> args;
    if (auto a = body.find("args"); a != body.end() && !a->is_null()) {
      if (!a->is_array()) co_return error_response(req, Errc::kBadRequest, "args must be an array of strings");
      for (const auto& v : *a) {
        if (!v.is_string()) co_return error_response(req, Errc::kBadRequest, "args must be an array of strings");
        args.push_back(v.get<std::string>());
      }
    }
    // execve takes C strings: a NUL would silently cut the command or an argument short.
    auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
    if (has_nul(command) || std::any_of(args.begin(), args.end(), has_nul))
      co_return error_response(req, Errc::kBadRequest, "command and args must not contain NUL");
    double timeout = 30;
    if (auto t = body.find("timeout"); t != body.end() && !t->is_null()) {
      if (!t->is_number() || t->get<double>() <= 0 || t->get<double>() > 3600)
        co_return error_response(req, Errc::kBadRequest, "timeout must be seconds in (0, 3600]");
      timeout = t->get<double>();
    }
    if (hub->kernel().state() == launcher::KernelState::kDead)
      co_return error_response(req, Errc::kConflict, "kernel is dead: " + hub->kernel().reason());
    launcher::ProcessRun run;
    run.env = hub->kernel().options().env;
    run.stdin_data = std::move(stdin_data);
    run.timeout = std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
    run.max_output = gw.config().execute_output_bytes;
    if (gw.config().spawner == "jail") {
      // Inside the kernel's own jail: same namespaces, cgroup, seccomp and user (cellgate-jail --join).
      run.argv = {gw.config().jail_helper, "--join", hub->kernel().process().status_file};
      // The same seccomp policy as the kernel's own.
      if (!gw.config().jail_policy.empty()) run.argv.insert(run.argv.end(), {"--policy", gw.config().jail_policy});
      for (const auto& [k, v] : run.env) run.argv.insert(run.argv.end(), {"--env", k + "=" + v});
      run.argv.push_back("--");
      run.env = {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}};
    } else {
      run.cwd = tree;
    }
    run.argv.push_back(command);
    run.argv.insert(run.argv.end(), args.begin(), args.end());
    auto outcome = co_await launcher::run_process(std::move(run));
    if (!outcome) co_return error_response(req, outcome.error());
    gw.audit(caller, "process", "kernel", hub->kernel().id(), {{"command", command}, {"exit_code", outcome->exit_code}});
    co_return json_response(req, http::status::ok,
                            {{"exit_code", outcome->exit_code}, {"stdout", outcome->stdout_data},
                             {"stderr", outcome->stderr_data}, {"timed_out", outcome->timed_out},
                             {"truncated", outcome->truncated}});
  }
  co_return error_response(req, Errc::kNotFound, "no such tool: " + tool + " (read, write, edit, exec, process)");
}

}  // namespace cellgate::gateway
