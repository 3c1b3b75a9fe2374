// SPDX-License-Identifier: BSD-3-Clause
// egress_options: cellgate-egress's command line (pure parsing, no side effects).
#include "egress/egress_options.h"

#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "common/size_text.h"
#include "egress/policy.h"

namespace cellgate::egress {
namespace {

using common::Errc;
using common::make_error;

bool parse_uint(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

// "127.0.0.1:8888", "[::1]:8888", "0.0.0.0:8888=the gateway"
bool parse_denied(std::string_view text, DeniedEndpoint& out) {
  size_t eq = text.find('=');
  out.what = eq == std::string_view::npos ? "a denied endpoint" : std::string(text.substr(eq + 1));
  auto t = parse_authority(text.substr(0, eq), std::nullopt);
  if (!t || !t->ip) return false;
  out.address = *t->ip;
  out.port = t->port;
  return true;
}

}  // namespace

std::string egress_help_text() {
  return R"(usage: cellgate-egress --control SOCKET [options]
       cellgate-egress ask SOCKET JSON     one control request (see egress_server.h), its answer

The egress proxy: kernels reach the network only through it, under their policy.

  --control PATH        unix socket for the gateway and cellgate-jail (created 0600)
  --hosts FILE          /etc/hosts-style names, resolved before DNS
  --no-dns              resolve only through --hosts
  --ca-dir DIR          the interception CA (created when missing); needed by header rules
  --system-bundle FILE  system trust store copied into DIR/bundle.pem (default /etc/ssl/certs/ca-certificates.crt)
  --upstream-ca FILE    extra CA certificates to trust for intercepted upstreams
  --secrets FILE        JSON {"NAME": "value"} that ${secret:NAME} in header rules expands to (mode 600)
  --audit-log FILE      one JSON line per connection; FILE.1 keeps the previous --audit-max-bytes
  --audit-max-bytes N   (default 64M)
  --state-dir DIR       keep each kernel's counters in DIR/counters.json (saved every second and at
                        exit), so a restarted proxy does not refill the caps; created 0700
  --deny ADDR:PORT[=WHAT]  never connect there (the gateway's own port); repeatable
  --ip-rules            accept {"cidr": ...} rules in policies
  --limits JSON         per-kernel defaults, e.g. {"bytes_out":"1G","open":64,"rate":50}
  --max-open N          connections open at once, all kernels (default 4096)
  --user UID[:GID]|NAME who to run as after setup when started as root (default 199999)
  --control-uid UID     another uid allowed on the control socket (repeatable)
  --log-level LEVEL     debug, info, warn, error
  --parent-pid PID      exit when process PID (the gateway that started it) exits
)";
}

common::Result<EgressOptions> parse_egress_options(int argc, const char* const* argv) {
  EgressOptions o;
  std::string why;  // a more precise reason than "invalid value", when a handler has one
  using Handler = std::function<bool(std::string_view)>;
  std::map<std::string, Handler, std::less<>> with_value = {
      {"--control", [&](std::string_view v) { o.control = v; return !v.empty() && v.size() < 100; }},
      {"--hosts", [&](std::string_view v) { o.hosts_file = v; return !v.empty(); }},
      {"--ca-dir", [&](std::string_view v) { o.ca_dir = v; return !v.empty(); }},
      {"--system-bundle", [&](std::string_view v) { o.system_bundle = v; return true; }},
      {"--upstream-ca", [&](std::string_view v) { o.upstream_ca = v; return !v.empty(); }},
      {"--secrets", [&](std::string_view v) { o.secrets_file = v; return !v.empty(); }},
      {"--audit-log", [&](std::string_view v) { o.audit_log = v; return !v.empty(); }},
      {"--state-dir", [&](std::string_view v) { o.state_dir = v; return !v.empty(); }},
      {"--audit-max-bytes", [&](std::string_view v) { return common::parse_size(v, o.audit_max_bytes) && o.audit_max_bytes >= 4096; }},
      {"--deny", [&](std::string_view v) {
         DeniedEndpoint d;
         if (!parse_denied(v, d) || o.denied.size() >= 64) return false;
         o.denied.push_back(std::move(d));
         return true;
       }},
      {"--limits", [&](std::string_view v) {
         auto doc = nlohmann::json::parse(v, nullptr, false);
         if (doc.is_discarded()) return false;
         auto p = parse_policy(nlohmann::json{{"limits", doc}}, ParseOptions{false, "--limits"});
         if (!p) {
           why = p.error().message;  // "--limits.limits.rate: ..." → "--limits rate: ..."
           if (size_t at = why.find(".limits."); at != std::string::npos) why.replace(at, 8, " ");
           return false;
         }
         o.limits = effective_limits(p->limits, o.limits);
         return true;
       }},
      {"--max-open", [&](std::string_view v) { return parse_uint(v, o.max_open) && o.max_open > 0; }},
      {"--user", [&](std::string_view v) { o.user = v; return !v.empty(); }},
      {"--control-uid", [&](std::string_view v) {
         uint64_t u = 0;
         if (!parse_uint(v, u) || u > 0xfffffffe) return false;
         o.control_uids.push_back(static_cast<uid_t>(u));
         return true;
       }},
      {"--log-level", [&](std::string_view v) { o.log_level = v; return true; }},
      {"--parent-pid", [&](std::string_view v) {
         uint64_t p = 0;
         if (!parse_uint(v, p) || p == 0 || p > 0x3fffffff) return false;
         o.parent_pid = static_cast<pid_t>(p);
         return true;
       }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      o.help = true;
      return o;
    }
    if (arg == "--no-dns") { o.dns = false; continue; }
    if (arg == "--ip-rules") { o.ip_rules = true; continue; }
    std::string_view key = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); eq != std::string_view::npos && arg.starts_with("--")) {
      key = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto it = with_value.find(key);
    if (it == with_value.end()) return make_error(Errc::kBadRequest, "unknown option '" + std::string(arg) + "' (see --help)");
    if (!inline_value) {
      if (i + 1 >= argc) return make_error(Errc::kBadRequest, "option " + std::string(key) + " needs a value");
      value = argv[++i];
    }
    if (!it->second(value)) {
      if (!why.empty()) return make_error(Errc::kBadRequest, why);
      return make_error(Errc::kBadRequest, "invalid value for " + std::string(key) + ": '" + std::string(value) + "'");
    }
  }
  if (o.control.empty()) return make_error(Errc::kBadRequest, "--control SOCKET is required (see --help)");
  return o;
}

}  // namespace cellgate::egress
