// SPDX-License-Identifier: BSD-3-Clause
// user: `cellgate user add|list|remove|reset-token|set-limits`, the admin's way to manage users.
#include "cli/user.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "egress/policy.h"
#include "state/audit_log.h"
#include "state/database.h"
#include "state/users.h"

namespace cellgate::cli {

using namespace state;  // the users, their store and the audit log are all state's

namespace {

// A usage or configuration error: one line on stderr, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* kUsage =
    "usage: cellgate user <command> [options]\n\n"
    "commands:\n"
    "  add NAME [--admin] [limits]   create a user and print its token (shown once)\n"
    "  list                          show users and their limits (never tokens)\n"
    "  remove NAME                   delete a user; its token stops working\n"
    "  reset-token NAME              replace a user's token and print the new one\n"
    "  set-limits NAME [limits]      change a user's limit overrides\n\n"
    "Every command takes --data-dir DIR (default: env CELLGATE_DATA_DIR, then ./data), --database URL\n"
    "(default: env CELLGATE_DATABASE, then the SQLite file in the data dir; as `cellgate serve --database`)\n"
    "and --help.\n";

constexpr const char* kLimitsHelp =
    "  --max-kernels N               kernels the user may run at once\n"
    "  --memory SIZE                 memory per kernel, e.g. 2G (suffixes K, M, G)\n"
    "  --cpus N                      CPU cores per kernel, e.g. 0.5\n"
    "  --pids N                      processes per kernel\n"
    "  --workspace-bytes SIZE        size of each workspace\n"
    "  --workspace-files N           files in each workspace\n"
    "  --exec-timeout SECONDS        longest execute request\n"
    "  --max-connections N           open WebSockets at once\n"
    "  --network POLICY              the most network the user's kernels may have: a policy as JSON, or\n"
    "                                @FILE (README \"Network policy\"); none = no network\n"
    "  --store-bytes SIZE            what all the user's snapshots may hold in the snapshot store\n"
    "  --journal-bytes SIZE          what the user's execution journals may hold (all kernels)\n"
    "  --journal-days N              days journal entries are kept\n";

struct Args {
  std::vector<std::string> positional;
  std::string data_dir;
  std::string database;  // "" = SQLite in data_dir
  bool admin = false;
  UserLimits limits;    // values given
  UserLimits clear;     // set-limits: fields given as "default" (any value here means "clear it")
  bool any_limit = false;
};

uint64_t parse_size(const std::string& flag, const std::string& v, uint64_t min = 0) {
  char* end = nullptr;
  errno = 0;
  double n = std::strtod(v.c_str(), &end);
  if (v.empty() || end == v.c_str() || errno || !(n >= 0)) throw UsageError(flag + ": not a size: '" + v + "'");
  std::string suffix(end);
  double mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1024.0;
  else if (suffix == "M" || suffix == "MiB") mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "TiB") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty()) throw UsageError(flag + ": unknown size suffix '" + suffix + "'");
  if (n * mult > 9.0e18) throw UsageError(flag + ": too large: '" + v + "'");
  if (n * mult < static_cast<double>(min)) throw UsageError(flag + ": must be at least " + std::to_string(min));
  return static_cast<uint64_t>(n * mult);
}

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || n < lo || n > hi)
    throw UsageError(fmt::format("{}: expected an integer in [{}, {}], got '{}'", flag, lo, hi, v));
  return n;
}

double parse_cpus(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double n = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(n > 0 && n <= 1024)) throw UsageError(flag + ": expected a number of cores in (0, 1024], got '" + v + "'");
  return n;
}

// A network policy (JSON, @FILE or "none") in its canonical form; errors name the field.
std::string parse_network(const std::string& v) {
  std::string text = v;
  if (v == "none") text = R"({"mode":"none"})";
  if (!v.empty() && v[0] == '@') {
    std::FILE* f = std::fopen(v.c_str() + 1, "re");
    if (!f) throw UsageError("--network: cannot read " + v.substr(1) + ": " + std::strerror(errno));
    text.clear();
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() < (1u << 20);) text.append(buf, n);
    std::fclose(f);
  }
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw UsageError("--network: not JSON (a policy object, @FILE or none)");
  // IP rules are accepted here; a gateway whose proxy runs without --ip-rules refuses them at use.
  auto policy = egress::parse_policy(doc, {.ip_rules = true, .field = "network"});
  if (!policy) throw UsageError("--network: " + policy.error().message);
  return egress::policy_json(policy.value()).dump();
}

// Parses options after the subcommand. with_limits: accept the limit flags; allow_default: a limit
// flag may say "default" (set-limits) to drop the override.
Args parse_args(int argc, char** argv, bool with_admin, bool with_limits, bool allow_default, const std::string& help) {
  Args a;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(help.c_str(), stdout);
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) {
      a.positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name == "--admin" && with_admin && !has_value) {
      a.admin = true;
      continue;
    }
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError(name + " needs a value");
      return argv[++i];
    };
    if (name == "--data-dir") {
      a.data_dir = take();
      if (a.data_dir.empty()) throw UsageError("--data-dir: empty path");
      continue;
    }
    if (name == "--database") {
      a.database = take();
      if (a.database.empty()) throw UsageError("--database: empty URL");
      continue;
    }
    static const std::vector<std::string> kLimitFlags = {"--max-kernels", "--memory", "--cpus", "--pids",
                                                         "--workspace-bytes", "--workspace-files", "--exec-timeout",
                                                         "--max-connections", "--network", "--store-bytes",
                                                         "--journal-bytes", "--journal-days"};
    if (!with_limits || std::find(kLimitFlags.begin(), kLimitFlags.end(), name) == kLimitFlags.end())
      throw UsageError("unknown option " + name + " (see --help)");
    std::string v = take();
    a.any_limit = true;
    const bool clear = allow_default && v == "default";
    UserLimits& dst = clear ? a.clear : a.limits;
    if (name == "--max-kernels") dst.max_kernels = clear ? 0 : parse_int(name, v, 0, 1 << 20);
    else if (name == "--memory") dst.memory_bytes = clear ? 0 : static_cast<int64_t>(parse_size(name, v, 1));
    else if (name == "--cpus") dst.cpus = clear ? 1.0 : parse_cpus(name, v);
    else if (name == "--pids") dst.pids = clear ? 0 : parse_int(name, v, 1, 1 << 22);
    else if (name == "--workspace-bytes") dst.workspace_bytes = clear ? 0 : static_cast<int64_t>(parse_size(name, v));
    else if (name == "--workspace-files") dst.workspace_files = clear ? 0 : parse_int(name, v, 0, int64_t{1} << 40);
    else if (name == "--max-connections") dst.max_connections = clear ? 0 : parse_int(name, v, 0, 1 << 20);
    else if (name == "--network") dst.network = clear ? std::string() : parse_network(v);
    else if (name == "--store-bytes") dst.store_bytes = clear ? 0 : static_cast<int64_t>(parse_size(name, v));
    else if (name == "--journal-bytes") dst.journal_bytes = clear ? 0 : static_cast<int64_t>(parse_size(name, v));
    else if (name == "--journal-days") dst.journal_days = clear ? 0 : parse_int(name, v, 0, 100 * 365);
    else dst.exec_timeout_s = clear ? 0 : parse_int(name, v, 1, 365 * 86400);
  }
  if (a.data_dir.empty()) {
    const char* env = std::getenv("CELLGATE_DATA_DIR");
    a.data_dir = env && *env ? env : "./data";
  }
  if (a.database.empty()) {
    const char* env = std::getenv("CELLGATE_DATABASE");
    if (env) a.database = env;
  }
  return a;
}

std::string one_name(const Args& a, const char* command) {
  if (a.positional.size() != 1) throw UsageError(fmt::format("{}: expected one user NAME (see --help)", command));
  if (!valid_user_name(a.positional[0]))
    throw UsageError(fmt::format("invalid user name '{}' (expected [A-Za-z0-9._-]{{1,64}})", a.positional[0]));
  return a.positional[0];
}

// Exit 1 with one line; the message already names the file or the user.
int fail(const common::Error& e) {
  std::fprintf(stderr, "cellgate user: %s\n", e.message.c_str());
  return 1;
}

std::optional<Database> open_db(const Args& a, bool create, int& rc) {
  std::error_code ec;
  if (!create && a.database.empty() &&
      !std::filesystem::exists(std::filesystem::path(a.data_dir) / Database::kFileName, ec)) {
    std::fprintf(stderr, "cellgate user: no user database in %s (add a user first, or pass --data-dir)\n",
                 a.data_dir.c_str());
    rc = 1;
    return std::nullopt;
  }
  auto db = Database::connect(a.database, a.data_dir);
  if (!db) {
    rc = fail(db.error());
    return std::nullopt;
  }
  return std::move(db).value();
}

std::string format_size(std::optional<int64_t> v) {
  if (!v) return "-";
  static const std::pair<int64_t, const char*> kUnits[] = {{int64_t{1} << 40, "T"}, {1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}};
  for (auto [unit, suffix] : kUnits)
    if (*v >= unit && *v % unit == 0) return fmt::format("{}{}", *v / unit, suffix);
  return std::to_string(*v);
}

std::string format_opt(std::optional<int64_t> v) { return v ? std::to_string(*v) : "-"; }
std::string format_opt(std::optional<double> v) { return v ? fmt::format("{}", *v) : "-"; }

nlohmann::json limits_json(const UserLimits& l) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const char* key, const auto& v) { j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  put("max_kernels", l.max_kernels);
  put("memory_bytes", l.memory_bytes);
  put("cpus", l.cpus);
  put("pids", l.pids);
  put("workspace_bytes", l.workspace_bytes);
  put("workspace_files", l.workspace_files);
  put("exec_timeout_s", l.exec_timeout_s);
  put("max_connections", l.max_connections);
  put("store_bytes", l.store_bytes);
  j["network"] = l.network ? nlohmann::json::parse(*l.network, nullptr, false) : nlohmann::json(nullptr);
  put("journal_bytes", l.journal_bytes);
  put("journal_days", l.journal_days);
  return j;
}

// The action already happened; a failing audit append is reported but does not undo it.
void audit(Database& db, const Args& a, const std::string& action, const std::string& name, nlohmann::json detail) {
  // With PostgreSQL nothing else has made the data dir, which holds this machine's audit.log.
  std::error_code ec;
  if (std::filesystem::create_directories(a.data_dir, ec)) ::chmod(a.data_dir.c_str(), 0700);
  auto log = AuditLog::open(db, a.data_dir);
  common::Status s = log ? log->record({"cli", action, "user", name, std::move(detail), true}) : common::Status(log.error());
  if (!s) std::fprintf(stderr, "cellgate user: warning: audit log: %s\n", s.error().message.c_str());
}

void print_token(const std::string& token, const std::string& what) {
  std::printf("%s\n", token.c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "cellgate user: %s. The token above is shown only once and is stored only as a hash: keep it now.\n"
               "Clients send it as 'Authorization: token <TOKEN>' (or ?token=<TOKEN>).\n",
               what.c_str());
}

int cmd_add(int argc, char** argv) {
  Args a = parse_args(argc, argv, true, true, false,
                      std::string("usage: cellgate user add NAME [--admin] [limits] [--data-dir DIR]\n\n"
                                  "Creates user NAME and prints its token on stdout (once).\n\n"
                                  "  --admin                       may see and manage every user's kernels\n") +
                          kLimitsHelp);
  std::string name = one_name(a, "add");
  int rc = 0;
  auto db = open_db(a, true, rc);
  if (!db) return rc;
  UserStore users(*db);
  auto token = users.add_user(name, a.admin, a.limits);
  if (!token) return fail(token.error());
  audit(*db, a, "user.add", name, {{"admin", a.admin}, {"limits", limits_json(a.limits)}});
  print_token(token.value(), fmt::format("added {}user '{}'", a.admin ? "admin " : "", name));
  return 0;
}

int cmd_list(int argc, char** argv) {
  Args a = parse_args(argc, argv, false, false, false,
                      "usage: cellgate user list [--data-dir DIR]\n\nShows every user and its limit overrides "
                      "('-' = the gateway's default). Tokens are never shown.\n");
  if (!a.positional.empty()) throw UsageError("list: unexpected argument '" + a.positional[0] + "'");
  int rc = 0;
  auto db = open_db(a, false, rc);
  if (!db) return rc;
  auto list = UserStore(*db).list_users();
  if (!list) return fail(list.error());
  constexpr const char* kRow =
      "{:<24} {:<5} {:>11} {:>7} {:>5} {:>7} {:>9} {:>9} {:>12} {:>9} {:>11} {:>10} {:>9}  {:<20}  {}\n";
  fmt::print(kRow, "NAME", "ADMIN", "MAX-KERNELS", "MEMORY", "CPUS", "PIDS", "WS-BYTES", "WS-FILES", "EXEC-TIMEOUT",
             "MAX-CONNS", "STORE-BYTES", "JRNL-BYTES", "JRNL-DAYS", "CREATED", "NETWORK");
  for (const auto& u : list.value()) {
    const auto& l = u.limits;
    fmt::print(kRow, u.name, u.admin ? "yes" : "no", format_opt(l.max_kernels), format_size(l.memory_bytes),
               format_opt(l.cpus), format_opt(l.pids), format_size(l.workspace_bytes), format_opt(l.workspace_files),
               format_opt(l.exec_timeout_s), format_opt(l.max_connections), format_size(l.store_bytes),
               format_size(l.journal_bytes), format_opt(l.journal_days), u.created, l.network ? *l.network : "-");
  }
  return 0;
}

int cmd_remove(int argc, char** argv) {
  Args a = parse_args(argc, argv, false, false, false,
                      "usage: cellgate user remove NAME [--data-dir DIR]\n\nDeletes user NAME; its token stops "
                      "working at once (a running gateway checks every request).\n");
  std::string name = one_name(a, "remove");
  int rc = 0;
  auto db = open_db(a, false, rc);
  if (!db) return rc;
  if (auto s = UserStore(*db).remove_user(name); !s) return fail(s.error());
  audit(*db, a, "user.remove", name, nlohmann::json::object());
  std::fprintf(stderr, "cellgate user: removed user '%s'\n", name.c_str());
  return 0;
}

int cmd_reset_token(int argc, char** argv) {
  Args a = parse_args(argc, argv, false, false, false,
                      "usage: cellgate user reset-token NAME [--data-dir DIR]\n\nGives user NAME a new token, "
                      "printed on stdout (once); the old token stops working.\n");
  std::string name = one_name(a, "reset-token");
  int rc = 0;
  auto db = open_db(a, false, rc);
  if (!db) return rc;
  auto token = UserStore(*db).reset_token(name);
  if (!token) return fail(token.error());
  audit(*db, a, "user.reset_token", name, nlohmann::json::object());
  print_token(token.value(), fmt::format("new token for user '{}'", name));
  return 0;
}

int cmd_set_limits(int argc, char** argv) {
  Args a = parse_args(argc, argv, false, true, true,
                      std::string("usage: cellgate user set-limits NAME [limits] [--data-dir DIR]\n\n"
                                  "Changes only the limits given; a value of 'default' drops the override.\n\n") +
                          kLimitsHelp);
  std::string name = one_name(a, "set-limits");
  if (!a.any_limit) throw UsageError("set-limits: give at least one limit (see --help)");
  int rc = 0;
  auto db = open_db(a, false, rc);
  if (!db) return rc;
  UserStore users(*db);
  auto user = users.get_user(name);
  if (!user) return fail(user.error());
  UserLimits l = user->limits;
  auto merge = [](auto& field, const auto& given, const auto& cleared) {
    if (given) field = given;
    if (cleared) field.reset();
  };
  merge(l.max_kernels, a.limits.max_kernels, a.clear.max_kernels);
  merge(l.memory_bytes, a.limits.memory_bytes, a.clear.memory_bytes);
  merge(l.cpus, a.limits.cpus, a.clear.cpus);
  merge(l.pids, a.limits.pids, a.clear.pids);
  merge(l.workspace_bytes, a.limits.workspace_bytes, a.clear.workspace_bytes);
  merge(l.workspace_files, a.limits.workspace_files, a.clear.workspace_files);
  merge(l.exec_timeout_s, a.limits.exec_timeout_s, a.clear.exec_timeout_s);
  merge(l.max_connections, a.limits.max_connections, a.clear.max_connections);
  merge(l.network, a.limits.network, a.clear.network);
  merge(l.store_bytes, a.limits.store_bytes, a.clear.store_bytes);
  merge(l.journal_bytes, a.limits.journal_bytes, a.clear.journal_bytes);
  merge(l.journal_days, a.limits.journal_days, a.clear.journal_days);
  if (auto s = users.set_limits(name, l); !s) return fail(s.error());
  audit(*db, a, "user.set_limits", name, {{"limits", limits_json(l)}});
  std::fprintf(stderr, "cellgate user: updated the limits of '%s'\n", name.c_str());
  return 0;
}

}  // namespace

int user_main(int argc, char** argv) {
  if (argc < 1) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string command = argv[0];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    if (command == "add") return cmd_add(argc - 1, argv + 1);
    if (command == "list") return cmd_list(argc - 1, argv + 1);
    if (command == "remove") return cmd_remove(argc - 1, argv + 1);
    if (command == "reset-token") return cmd_reset_token(argc - 1, argv + 1);
    if (command == "set-limits") return cmd_set_limits(argc - 1, argv + 1);
    std::fprintf(stderr, "cellgate user: unknown command '%s' (see cellgate user --help)\n", command.c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "cellgate user: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellgate user: %s\n", e.what());
    return 1;
  }
}

}  // namespace cellgate::cli
