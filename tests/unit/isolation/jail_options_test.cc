// SPDX-License-Identifier: BSD-3-Clause
// jail_options: command-line parsing, sizes, names and the help text.
#include "isolation/jail_options.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace cellgate::isolation;

namespace {
cellgate::common::Result<JailOptions> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "cellgate-jail");
  return parse_options(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("sizes accept binary suffixes and reject junk", "[isolation]") {
  uint64_t v = 0;
  CHECK((parse_size("512M", v) && v == 512ULL << 20));
  CHECK((parse_size("1G", v) && v == 1ULL << 30));
  CHECK((parse_size("1.5GiB", v) && v == 3ULL << 29));
  CHECK((parse_size("4096", v) && v == 4096));
  CHECK((parse_size("2k", v) && v == 2048));
  CHECK_FALSE(parse_size("", v));
  CHECK_FALSE(parse_size("M", v));
  CHECK_FALSE(parse_size("-1G", v));
  CHECK_FALSE(parse_size("12X", v));
  CHECK_FALSE(parse_size("0", v));
}

TEST_CASE("names follow [a-zA-Z0-9_-]{1,64}", "[isolation]") {
  CHECK(valid_name("k-1_A"));
  CHECK_FALSE(valid_name(""));
  CHECK_FALSE(valid_name("a/b"));
  CHECK_FALSE(valid_name(std::string(65, 'a')));
  CHECK(valid_name(std::string(64, 'a')));
}

TEST_CASE("a full command line parses", "[isolation]") {
  auto o = parse({"--name", "k1", "--memory=512M", "--pids", "64", "--cpu", "0.5", "--workspace", "/srv/ws",
                  "--bind-same", "/run/x", "--connection-file", "/run/k/abc/c.json", "--ro-bind", "/data:/mnt/data",
                  "--env", "A=1", "--env", "B=x=y", "--hostname", "h", "--uid-range", "300000:131072",
                  "--ready-fd", "3", "--status-file", "/tmp/s", "--no-cgroup", "--", "python3", "-c", "pass"});
  REQUIRE(o);
  CHECK(o->name == "k1");
  CHECK(*o->limits.memory == 512ULL << 20);
  CHECK(*o->limits.pids == 64);
  CHECK(*o->limits.cpu == Approx(0.5));
  CHECK(o->bind_same == std::vector<std::string>{"/run/x", "/run/k/abc"});
  CHECK(o->ro_binds.at(0).source == "/data");
  CHECK(o->ro_binds.at(0).target == "/mnt/data");
  CHECK(o->env.at(1).second == "x=y");
  CHECK(o->uid_start == 300000);
  CHECK(o->uid_count == 131072);
  CHECK(o->ready_fd == 3);
  CHECK(o->no_cgroup);
  CHECK(o->command == std::vector<std::string>{"python3", "-c", "pass"});
}

TEST_CASE("bad options are refused with a message", "[isolation]") {
  CHECK_FALSE(parse({"--", }));
  CHECK_FALSE(parse({"--bogus", "--", "true"}));
  CHECK_FALSE(parse({"--memory", "lots", "--", "true"}));
  CHECK_FALSE(parse({"--name", "a b", "--", "true"}));
  CHECK_FALSE(parse({"--uid-range", "0:65536", "--", "true"}));      // would map host root
  CHECK_FALSE(parse({"--uid-range", "100000:1000", "--", "true"}));  // not a whole slot
  CHECK_FALSE(parse({"--ready-fd", "1", "--", "true"}));
  CHECK_FALSE(parse({"--workspace", "relative", "--", "true"}));
  CHECK_FALSE(parse({"--env", "=x", "--", "true"}));
  CHECK_FALSE(parse({"--pids"}));
  auto e = parse({"--frobnicate", "--", "true"});
  REQUIRE_FALSE(e);
  CHECK(e.error().message.find("--frobnicate") != std::string::npos);
}

TEST_CASE("--help documents every option", "[isolation]") {
  const std::string help = help_text();
  for (const char* opt : {"--name", "--policy", "--workspace", "--bind-same", "--connection-file", "--ro-bind", "--env",
                          "--hostname", "--memory", "--pids", "--cpu", "--nofile", "--fsize", "--tmp-size",
                          "--uid-range", "--status-file", "--ready-fd", "--cgroup-root", "--no-cgroup", "--help"}) {
    INFO(opt);
    CHECK(help.find(opt) != std::string::npos);
  }
  auto o = parse({"--help"});
  REQUIRE(o);
  CHECK(o->help);
}

TEST_CASE("join mode takes a status file and only --env, --env-file and --policy", "[isolation]") {
  auto o = parse({"--join", "/run/x/jail.json", "--env", "A=1", "--env-file", "/run/x/env", "--policy", "/p.json",
                  "--", "id", "-u"});
  REQUIRE(o.has_value());
  CHECK(o->join == "/run/x/jail.json");
  CHECK(o->env.size() == 1);
  CHECK(o->env_file == "/run/x/env");
  CHECK(o->policy_file == "/p.json");
  CHECK(o->command == std::vector<std::string>{"id", "-u"});
  auto eq = parse({"--join=/s.json", "--", "true"});
  REQUIRE(eq.has_value());
  CHECK(eq->join == "/s.json");
  for (auto bad : {std::vector<const char*>{"--join", "/s", "--memory", "1G", "--", "true"},
                   std::vector<const char*>{"--memory", "1G", "--join", "/s", "--", "true"},
                   std::vector<const char*>{"--join", "/s", "--no-cgroup", "--", "true"},
                   std::vector<const char*>{"--join", "/s", "--status-file", "/t", "--", "true"},
                   std::vector<const char*>{"--join", "", "--", "true"},
                   std::vector<const char*>{"--join", "/s"}}) {
    auto r = parse(bad);
    CHECK_FALSE(r.has_value());
  }
  auto mixed = parse({"--join", "/s", "--pids", "9", "--", "true"});
  REQUIRE_FALSE(mixed.has_value());
  CHECK(mixed.error().message.find("--pids cannot be used with --join") != std::string::npos);
}

TEST_CASE("the kernel log bound is a size of at least 4K", "[isolation]") {
  auto o = parse({"--kernel-log-bytes", "2M", "--", "true"});
  REQUIRE(o.has_value());
  CHECK(o->kernel_log_bytes == (2u << 20));
  CHECK(parse({"--", "true"})->kernel_log_bytes == (1u << 20));
  CHECK_FALSE(parse({"--kernel-log-bytes", "100", "--", "true"}).has_value());
  CHECK_FALSE(parse({"--kernel-log-bytes", "x", "--", "true"}).has_value());
  CHECK_FALSE(parse({"--join", "/s", "--kernel-log-bytes", "1M", "--", "true"}).has_value());
}

TEST_CASE("attach mode takes a status file and --workspace, nothing else", "[isolation]") {
  auto o = parse({"--attach-workspace", "/run/x/jail.json", "--workspace", "/data/w/tree"});
  REQUIRE(o.has_value());
  CHECK(o->attach_workspace == "/run/x/jail.json");
  CHECK(o->workspace == "/data/w/tree");
  CHECK(o->command.empty());
  for (auto bad : {std::vector<const char*>{"--attach-workspace", "/s"},
                   std::vector<const char*>{"--attach-workspace", "/s", "--workspace", "/w", "--", "true"},
                   std::vector<const char*>{"--attach-workspace", "/s", "--workspace", "/w", "--memory", "1G"},
                   std::vector<const char*>{"--attach-workspace", "/s", "--workspace", "/w", "--env", "A=1"},
                   std::vector<const char*>{"--attach-workspace", "/s", "--workspace", "/w", "--join", "/s"},
                   std::vector<const char*>{"--join", "/s", "--workspace", "/w", "--", "true"}}) {
    CHECK_FALSE(parse(bad).has_value());
  }
}

TEST_CASE("the egress options name the proxy control socket and the port inside", "[isolation]") {
  auto o = parse({"--name", "k1", "--egress", "/run/cellgate/egress.sock", "--egress-port", "8080", "--", "true"});
  REQUIRE(o);
  CHECK(o->egress_socket == "/run/cellgate/egress.sock");
  CHECK(o->egress_port == 8080);
  auto d = parse({"--egress=/e.sock", "--", "true"});
  REQUIRE(d);
  CHECK(d->egress_port == 3128);
  CHECK_FALSE(parse({"--egress", "relative.sock", "--", "true"}));
  CHECK_FALSE(parse({"--egress-port", "0", "--", "true"}));
  CHECK_FALSE(parse({"--egress-port", "65536", "--", "true"}));
  CHECK_FALSE(parse({"--join", "/s", "--egress", "/e.sock", "--", "true"}));  // a join shares the jail's
  CHECK(help_text().find("--egress SOCKET") != std::string::npos);
  CHECK(help_text().find("--egress-port") != std::string::npos);
}

TEST_CASE("the memory-merge option is off unless on is given, and a join cannot set it", "[isolation]") {
  auto off = parse({"--", "true"});
  REQUIRE(off);
  CHECK_FALSE(off->memory_merge);
  auto on = parse({"--memory-merge", "on", "--", "true"});
  REQUIRE(on);
  CHECK(on->memory_merge);
  CHECK_FALSE(parse({"--memory-merge", "yes", "--", "true"}));
  CHECK_FALSE(parse({"--join", "/s", "--memory-merge", "on", "--", "true"}));
  CHECK(help_text().find("side channel") != std::string::npos);
}

TEST_CASE("egress-attach mode takes a status file, the proxy socket and the jail's name, nothing else", "[isolation]") {
  auto o = parse({"--egress-attach", "/run/x/jail.json", "--egress", "/run/e.sock", "--name", "k1"});
  REQUIRE(o);
  CHECK(o->egress_attach == "/run/x/jail.json");
  CHECK(o->egress_socket == "/run/e.sock");
  CHECK(o->name == "k1");
  CHECK(o->command.empty());
  for (auto bad : {std::vector<const char*>{"--egress-attach", "/s", "--egress", "/e"},
                   std::vector<const char*>{"--egress-attach", "/s", "--name", "k1"},
                   std::vector<const char*>{"--egress-attach", "/s", "--egress", "/e", "--name", "k", "--", "true"},
                   std::vector<const char*>{"--egress-attach", "/s", "--egress", "/e", "--name", "k", "--memory", "1G"},
                   std::vector<const char*>{"--join", "/s", "--name", "k", "--", "true"}}) {
    CHECK_FALSE(parse(bad).has_value());
  }
  CHECK(help_text().find("--egress-attach STATUS_FILE") != std::string::npos);
}
