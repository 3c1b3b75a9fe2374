// SPDX-License-Identifier: BSD-3-Clause
// reproduce: `cellgate reproduce KERNEL_ID` against a running gateway.
#include "cli/reproduce.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "cli/option_value.h"
#include "client/http_client.h"
#include "common/config_error.h"

namespace cellgate::cli {

namespace {

using nlohmann::json;

constexpr const char* kHelp =
    "usage: cellgate reproduce KERNEL_ID [options]\n\n"
    "Re-runs a kernel's execution journal on a new kernel of the same kernelspec, on a workspace\n"
    "restored from the journal's baseline snapshot, and compares the outputs cell by cell (README\n"
    "\"Execution journal\"). The kernel may be gone, within the journal's retention.\n\n"
    "  --upto SEQ      re-run the journal up to this entry (default: all of it)\n"
    "  --keep          leave the new kernel and its workspace for inspection\n"
    "  --json          print the gateway's answer as JSON\n"
    "  --timeout S     give up after S seconds (default 1800)\n"
    "  --url URL       the gateway (env CELLGATE_URL)\n"
    "  --token T       a token of the journal's owner or an admin (env CELLGATE_TOKEN)\n\n"
    "Exit status: 0 every compared cell matched; 1 a cell diverged; 2 the reproduction could not run.\n";

struct Args {
  std::string kernel_id, url, token;
  json body = json::object();
  bool json_out = false;
  long timeout_s = 1800;
};

long parse_number(const std::string& flag, const std::string& v, long min, long max) {
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || n < min || n > max)
    throw common::ConfigError(fmt::format("{}: expected a whole number in [{}, {}], got '{}'", flag, min, max, v));
  return n;
}

Args parse_args(int argc, char** argv) {
  Args a;
  if (const char* u = std::getenv("CELLGATE_URL")) a.url = u;
  if (const char* t = std::getenv("CELLGATE_TOKEN")) a.token = t;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kHelp, stdout);
      std::exit(0);
    }
    if (arg == "--keep") {
      a.body["keep"] = true;
      continue;
    }
    if (arg == "--json") {
      a.json_out = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!a.kernel_id.empty()) throw common::ConfigError("unexpected argument '" + arg + "' (one kernel id)");
      a.kernel_id = arg;
      continue;
    }
    value = option_value(arg, argc, argv, i);
    if (arg == "--upto") a.body["upto"] = parse_number(arg, value, 1, 0x7fffffffffffffffL);
    else if (arg == "--timeout") a.timeout_s = parse_number(arg, value, 1, 86400);
    else if (arg == "--url") a.url = value;
    else if (arg == "--token") a.token = value;
    else throw common::ConfigError("unknown option " + arg + " (cellgate reproduce --help)");
  }
  if (a.kernel_id.empty()) throw common::ConfigError("no kernel id given (usage: cellgate reproduce KERNEL_ID)");
  if (a.url.empty()) throw common::ConfigError("no gateway: pass --url URL or set CELLGATE_URL");
  return a;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// At most n bytes of text, on lines of their own, indented.
std::string excerpt(const std::string& text, size_t n = 400) {
  std::string cut = text.size() > n ? text.substr(0, n) + "..." : text;
  std::string out = "    ";
  for (char c : cut) {
    out += c;
    if (c == '\n') out += "    ";
  }
  return out + "\n";
}

}  // namespace

std::string reproduce_report_text(const json& r) {
  std::string out;
  const json cells = r.value("cells", json::array());
  const json* first = nullptr;
  for (const auto& c : cells) {
    const std::string kind = c.value("kind", "");
    if (kind != "execute") {
      out += fmt::format("[{}] {}: the reproduction's kernel was restarted here\n", str(c, "seq"), kind);
      continue;
    }
    const json match = c.value("match", json());
    std::string verdict = c.contains("skipped")  ? "skipped"
                          : match.is_boolean() ? (match.get<bool>() ? "match" : "DIVERGED")
                                               : "not compared";
    std::string why = c.contains("skipped") ? str(c, "skipped") : str(c, "note");
    out += fmt::format("[{}] {}: recorded {}, reproduced {}{}{}\n", str(c, "seq"), verdict, str(c, "recorded_status"),
                       c.contains("status") ? str(c, "status") : "-", why.empty() ? "" : "; ", why);
    if (!first && match.is_boolean() && !match.get<bool>()) first = &c;
  }
  out += fmt::format("{} matched, {} diverged, {} skipped (journal of {} up to entry {}; reproduced on kernel {}{})\n",
                     str(r, "matched"), str(r, "diverged"), str(r, "skipped"), str(r, "kernel_id"), str(r, "upto"),
                     str(r.value("reproduced_on", json::object()), "kernel_id"),
                     r.value("reproduced_on", json::object()).value("kept", false) ? ", kept" : ", deleted");
  if (first) {
    out += fmt::format("first divergence: entry {}\n  code:\n{}  recorded:\n{}  reproduced:\n{}", str(*first, "seq"),
                       excerpt(str(*first, "code")), excerpt(str(*first, "recorded")), excerpt(str(*first, "reproduced")));
  }
  return out;
}

int reproduce_main(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  auto base = client::parse_base_url(a.url);
  if (!base) {
    std::fprintf(stderr, "cellgate reproduce: %s\n", base.error().message.c_str());
    return 2;
  }
  client::HttpClient http(*base);
  client::RestCall call{"POST", "api/kernels/" + client::escape_segment(a.kernel_id) + "/journal/reproduce", a.body,
                        std::chrono::seconds(a.timeout_s)};
  auto reply = http.call(call, a.token);
  if (!reply) {
    std::fprintf(stderr, "cellgate reproduce: %s\n", reply.error().message.c_str());
    return 2;
  }
  const json& body = reply->body;
  if (reply->status != 200 || !body.is_object() || !body.contains("cells")) {
    std::string why = body.is_object() && body.contains("message") ? str(body, "message") : body.dump();
    std::fprintf(stderr, "cellgate reproduce: the gateway answered %d: %s\n", reply->status, why.c_str());
    return 2;
  }
  if (a.json_out) std::cout << body.dump(1) << "\n";
  else std::cout << reproduce_report_text(body);
  const bool diverged = body.value("diverged", 0) > 0 || !body.value("first_divergence", json()).is_null();
  return diverged ? 1 : 0;
}

}  // namespace cellgate::cli
