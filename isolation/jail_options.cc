// SPDX-License-Identifier: BSD-3-Clause
// jail_options: cellgate-jail's command line (pure parsing, no side effects).
#include "isolation/jail_options.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

#include "isolation/cgroup_paths.h"

namespace cellgate::isolation {
namespace {

using common::Errc;
using common::make_error;

constexpr size_t kMaxRepeat = 64;  // bound on repeatable options

common::Error bad(std::string message) { return make_error(Errc::kBadRequest, std::move(message)); }

bool parse_cpu(std::string_view text, double& out) {
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0.01 || v > 1024) return false;
  out = v;
  return true;
}

}  // namespace

bool parse_uint(std::string_view text, uint64_t& out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  out = v;
  return true;
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool parse_bind(std::string_view text, BindSpec& out) {
  size_t colon = text.find(':');
  std::string_view src = text.substr(0, colon);
  std::string_view dst = colon == std::string_view::npos ? src : text.substr(colon + 1);
  if (src.empty() || dst.empty() || src[0] != '/' || dst[0] != '/') return false;
  if (src.size() > 1024 || dst.size() > 1024) return false;
  out = BindSpec{std::string(src), std::string(dst)};
  return true;
}

common::Result<JailOptions> parse_options(int argc, const char* const* argv) {
  JailOptions o;
  using Handler = std::function<bool(std::string_view)>;
  auto size_opt = [](std::optional<uint64_t>& field) {
    return [&field](std::string_view v) { uint64_t x; if (!parse_size(v, x)) return false; field = x; return true; };
  };
  auto count_opt = [](std::optional<uint64_t>& field) {
    return [&field](std::string_view v) { uint64_t x; if (!parse_uint(v, x) || x == 0) return false; field = x; return true; };
  };
  std::map<std::string, Handler, std::less<>> with_value = {
      {"--name", [&](std::string_view v) { o.name = v; return valid_name(v); }},
      {"--policy", [&](std::string_view v) { o.policy_file = v; return !v.empty(); }},
      {"--workspace", [&](std::string_view v) { o.workspace = v; return !v.empty() && v[0] == '/'; }},
      {"--bind-same", [&](std::string_view v) {
         if (v.empty() || v[0] != '/' || o.bind_same.size() >= kMaxRepeat) return false;
         o.bind_same.emplace_back(v);
         return true;
       }},
      {"--connection-file", [&](std::string_view v) {
         size_t slash = v.rfind('/');
         if (v.empty() || v[0] != '/' || slash == 0 || o.bind_same.size() >= kMaxRepeat) return false;
         o.bind_same.emplace_back(v.substr(0, slash));
         return true;
       }},
      {"--ro-bind", [&](std::string_view v) {
         BindSpec b;
         if (!parse_bind(v, b) || o.ro_binds.size() >= kMaxRepeat) return false;
         o.ro_binds.push_back(std::move(b));
         return true;
       }},
      {"--env", [&](std::string_view v) {
         size_t eq = v.find('=');
         if (eq == 0 || eq == std::string_view::npos || o.env.size() >= kMaxEnvEntries) return false;
         o.env.emplace_back(std::string(v.substr(0, eq)), std::string(v.substr(eq + 1)));
         return true;
       }},
      {"--env-file", [&](std::string_view v) { o.env_file = v; return !v.empty() && v.size() <= 4096; }},
      {"--kernel-log-bytes", [&](std::string_view v) {
         uint64_t x;
         if (!parse_size(v, x) || x < 4096) return false;
         o.kernel_log_bytes = x;
         return true;
       }},
      {"--hostname", [&](std::string_view v) { o.hostname = std::string(v); return !v.empty() && v.size() <= 64; }},
      {"--memory", size_opt(o.limits.memory)},
      {"--pids", count_opt(o.limits.pids)},
      {"--cpu", [&](std::string_view v) { double c; if (!parse_cpu(v, c)) return false; o.limits.cpu = c; return true; }},
      {"--nofile", count_opt(o.limits.nofile)},
      {"--fsize", size_opt(o.limits.fsize)},
      {"--tmp-size", size_opt(o.limits.tmp_size)},
      {"--uid-range", [&](std::string_view v) {
         size_t colon = v.find(':');
         if (colon == std::string_view::npos) return false;
         if (!parse_uint(v.substr(0, colon), o.uid_start) || !parse_uint(v.substr(colon + 1), o.uid_count)) return false;
         // Never host root, whole 65536-uid slots, and inside 32-bit uid space.
         return o.uid_start >= 1 && o.uid_count >= 65536 && o.uid_count % 65536 == 0 &&
                o.uid_start + o.uid_count <= 0xFFFFFFFFULL;
       }},
      {"--status-file", [&](std::string_view v) { o.status_file = v; return !v.empty(); }},
      {"--ready-fd", [&](std::string_view v) {
         uint64_t fd; if (!parse_uint(v, fd) || fd < 3 || fd > 65535) return false;
         o.ready_fd = static_cast<int>(fd);
         return true;
       }},
      {"--cgroup-root", [&](std::string_view v) { o.cgroup_root = v; return !v.empty() && v[0] == '/'; }},
      {"--cgroup-owner", [&](std::string_view v) { o.cgroup_owner = v; return valid_owner(v); }},
      {"--kernels-cpu-weight", [&](std::string_view v) {
         uint64_t w = 0;
         if (!parse_uint(v, w) || w < 1 || w > 10000) return false;
         o.kernels_cpu_weight = static_cast<uint32_t>(w);
         return true;
       }},
      {"--join", [&](std::string_view v) { o.join = v; return !v.empty() && v.size() <= 4096; }},
      {"--attach-workspace", [&](std::string_view v) { o.attach_workspace = v; return !v.empty() && v.size() <= 4096; }},
      {"--egress", [&](std::string_view v) { o.egress_socket = v; return !v.empty() && v[0] == '/' && v.size() < 108; }},
      {"--egress-attach", [&](std::string_view v) { o.egress_attach = v; return !v.empty() && v.size() <= 4096; }},
      {"--memory-merge", [&](std::string_view v) {
         o.memory_merge = v == "on";
         return v == "on" || v == "off";
       }},
      {"--egress-port", [&](std::string_view v) {
         uint64_t port = 0;
         if (!parse_uint(v, port) || port == 0 || port > 65535) return false;
         o.egress_port = static_cast<uint16_t>(port);
         return true;
       }},
  };
  std::string jail_only;  // the first option that builds a jail (meaningless with --join)
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") { ++i; break; }
    if (arg == "--help" || arg == "-h") { o.help = true; return o; }
    if (arg == "--no-cgroup") {
      o.no_cgroup = true;
      if (jail_only.empty()) jail_only = arg;
      continue;
    }
    std::string_view key = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos && arg.starts_with("--")) {
      key = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto it = with_value.find(key);
    if (it == with_value.end()) return bad("unknown option '" + std::string(arg) + "' (see --help)");
    if (!inline_value) {
      if (i + 1 >= argc) return bad("option " + std::string(key) + " needs a value");
      value = argv[++i];
    }
    if (!it->second(value)) return bad("invalid value for " + std::string(key) + ": '" + std::string(value) + "'");
    if (key != "--join" && key != "--env" && key != "--env-file" && key != "--policy" && key != "--attach-workspace" &&
        key != "--workspace" && key != "--egress-attach" && key != "--egress" && key != "--name" && jail_only.empty())
      jail_only = key;
  }
  if (!o.egress_attach.empty()) {
    if (!jail_only.empty() || !o.join.empty() || !o.env.empty() || !o.env_file.empty() || !o.policy_file.empty() ||
        !o.workspace.empty() || !o.attach_workspace.empty())
      return bad("--egress-attach takes only --egress SOCKET and --name NAME");
    if (o.egress_socket.empty() || o.name.empty()) return bad("--egress-attach needs --egress SOCKET and --name NAME");
    if (i < argc) return bad("--egress-attach runs no command");
    return o;
  }
  if (!o.attach_workspace.empty()) {
    if (!jail_only.empty() || !o.join.empty() || !o.env.empty() || !o.env_file.empty() || !o.policy_file.empty())
      return bad("--attach-workspace takes only --workspace DIR");
    if (o.workspace.empty()) return bad("--attach-workspace needs --workspace DIR");
    if (i < argc) return bad("--attach-workspace runs no command");
    return o;
  }
  for (auto [given, option] : {std::pair{!o.egress_socket.empty(), "--egress"}, {!o.name.empty(), "--name"}}) {
    if (!o.join.empty() && given)
      return bad("option " + std::string(option) + " cannot be used with --join (only --env, --env-file and --policy can)");
  }
  if (!o.join.empty() && !o.workspace.empty())
    return bad("option --workspace cannot be used with --join (only --env, --env-file and --policy can)");
  if (!o.join.empty() && !jail_only.empty())
    return bad("option " + jail_only + " cannot be used with --join (only --env, --env-file and --policy can)");
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.command.empty()) return bad("no command given (usage: cellgate-jail [options] -- CMD ARGS...)");
  if (o.command.size() > 4096) return bad("too many command arguments");
  return o;
}

}  // namespace cellgate::isolation
