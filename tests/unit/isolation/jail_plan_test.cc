// SPDX-License-Identifier: BSD-3-Clause
// jail_plan: limit layering, rlimits and the child's materialised view.
#include "isolation/jail_plan.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace cellgate::isolation;

TEST_CASE("command line beats policy beats built-in limits", "[isolation]") {
  Limits options, policy;
  policy.memory = 2ULL << 30;
  policy.pids = 64;
  options.pids = 32;
  options.cpu = 0.5;
  ResolvedLimits r = resolve_limits(options, policy);
  CHECK(r.memory == 2ULL << 30);
  CHECK(r.pids == 32);
  CHECK(r.cpu == Approx(0.5));
  CHECK(r.nofile == 1024);
  CHECK(r.tmp_size == 256ULL << 20);
}

TEST_CASE("rlimits: no core dumps, nofile clamped to what we may set, no RT priority or negative nice", "[isolation]") {
  ResolvedLimits r;
  r.nofile = 100000;
  auto limits = plan_rlimits(r, 4096);
  REQUIRE(limits.size() == 5);
  CHECK(limits[0].resource == RLIMIT_CORE);
  CHECK(limits[0].value.rlim_max == 0);
  CHECK(limits[1].resource == RLIMIT_NOFILE);
  CHECK(limits[1].value.rlim_cur == 4096);
  CHECK(limits[2].resource == RLIMIT_FSIZE);
  CHECK(limits[2].value.rlim_max == r.fsize);
  CHECK(limits[3].resource == RLIMIT_RTPRIO);
  CHECK(limits[3].value.rlim_max == 0);
  CHECK(limits[4].resource == RLIMIT_NICE);
  CHECK(limits[4].value.rlim_max == 0);
}

TEST_CASE("the child plan points at complete, NULL-terminated arrays", "[isolation]") {
  JailOptions o;
  o.command = {"python3", "-c", "pass"};
  o.env = {{"A", "1"}};
  o.hostname = "box";
  auto policy = default_policy();
  REQUIRE(policy);
  MountInputs in;
  in.new_root = "/run/cellgate-root";
  in.hostname = "box";
  in.tmp_size = 1 << 20;
  auto plan = JailPlan::build(o, *policy, in, std::vector<sock_filter>(3));
  REQUIRE(plan);
  auto c = plan->child_plan(5, 6, 7);
  CHECK(std::string(c.argv[0]) == "python3");
  CHECK(c.argv[3] == nullptr);
  CHECK(std::string(c.exec_paths[0]) == "/usr/local/bin/python3");
  size_t n_env = 0;
  while (c.envp[n_env] != nullptr) ++n_env;
  CHECK(n_env == plan->env().size());
  CHECK(std::string(c.hostname, c.hostname_len) == "box");
  CHECK(c.filter_len == 3);
  CHECK(c.uid == 1000);
  CHECK(std::string(c.cwd) == "/workspace");
  CHECK(c.sync_fd == 5);
  CHECK(c.report_fd == 6);
  CHECK(c.exit_fd == 7);
  CHECK(c.n_mounts == plan->mounts().ops().size());
  CHECK(c.n_rlimits == 5);
}
