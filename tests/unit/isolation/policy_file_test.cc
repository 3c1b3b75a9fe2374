// SPDX-License-Identifier: BSD-3-Clause
// policy_file: the built-in default and layering of policy documents.
#include "isolation/policy_file.h"

#include <catch2/catch.hpp>

#include <algorithm>

#include "isolation/seccomp_policy.h"

using namespace cellgate::isolation;

TEST_CASE("the built-in default policy parses and sets the documented defaults", "[isolation]") {
  auto p = default_policy();
  REQUIRE(p);
  CHECK(*p->limits.memory == 1ULL << 30);
  CHECK(*p->limits.pids == 256);
  CHECK(*p->limits.cpu == Approx(1));
  CHECK(p->hostname == "sandbox");
  CHECK(p->umask == 022);
  auto sets = effective_syscalls(*p);
  for (const char* denied : {"ptrace", "mount", "unshare", "setns", "bpf", "io_uring_setup", "userfaultfd",
                             "keyctl", "open_by_handle_at", "name_to_handle_at", "move_mount", "pivot_root"}) {
    INFO(denied);
    CHECK(sets.deny.count(denied) == 1);
    CHECK(sets.allow.count(denied) == 0);
  }
  CHECK(sets.allow.count("read") == 1);
  CHECK(sets.allow.count("clone") == 1);
  CHECK(sets.explicit_allow.empty());
}

TEST_CASE("a policy layers over the default: lists add, allow un-denies, scalars replace", "[isolation]") {
  auto base = default_policy();
  REQUIRE(base);
  auto p = layer_policy(base.value(), R"({"seccomp": {"allow": ["ptrace"], "deny": ["mremap"]},
      "limits": {"memory": "2G", "pids": 32}, "env": {"A": "1"}, "ro_binds": ["/opt:/mnt/opt"],
      "hostname": "box", "umask": "0007"})");
  REQUIRE(p);
  auto sets = effective_syscalls(*p);
  CHECK(sets.allow.count("ptrace") == 1);
  CHECK(sets.explicit_allow.count("ptrace") == 1);
  CHECK(sets.deny.count("ptrace") == 0);
  CHECK(sets.deny.count("mremap") == 1);
  CHECK(sets.deny.count("mount") == 1);  // inherited
  CHECK(*p->limits.memory == 2ULL << 30);
  CHECK(*p->limits.pids == 32);
  CHECK(*p->limits.nofile == 1024);  // inherited
  CHECK(p->env.back() == std::pair<std::string, std::string>{"A", "1"});
  CHECK(p->ro_binds.back().target == "/mnt/opt");
  CHECK(p->hostname == "box");
  CHECK(p->umask == 07);
}

TEST_CASE("usr_etc_links is on by default and a policy may turn it off", "[isolation]") {
  auto base = default_policy();
  REQUIRE(base);
  CHECK(base->usr_etc_links);
  auto off = layer_policy(base.value(), R"({"usr_etc_links": false})");
  REQUIRE(off);
  CHECK_FALSE(off->usr_etc_links);
}

TEST_CASE("within one document deny wins over allow", "[isolation]") {
  auto p = layer_policy(Policy{}, R"({"seccomp": {"allow": ["mremap"], "deny": ["mremap"]}})");
  REQUIRE(p);
  CHECK(effective_syscalls(*p).deny.count("mremap") == 1);
}

TEST_CASE("invalid policies are refused, never thrown", "[isolation]") {
  for (const char* text : {"", "[]", "{", R"({"unknown": 1})", R"({"version": 2})", R"({"limits": {"memory": "x"}})",
                           R"({"limits": {"bogus": 1}})", R"({"seccomp": {"deny": "ptrace"}})",
                           R"({"seccomp": {"base": "none"}})", R"({"ro_binds": ["relative"]})",
                           R"({"umask": "999"})", R"({"env": {"A": 1}})", R"({"etc_binds": ["etc"]})",
                           R"({"usr_etc_links": "yes"})", R"({"usr_etc_links": 1})"}) {
    INFO(text);
    CHECK_FALSE(layer_policy(Policy{}, text));
  }
}

TEST_CASE("load_policy reports a missing file", "[isolation]") {
  auto p = load_policy("/nonexistent/policy.json");
  REQUIRE_FALSE(p);
  CHECK(p.error().message.find("/nonexistent/policy.json") != std::string::npos);
}
