// SPDX-License-Identifier: BSD-3-Clause
// join_target: status documents and /proc/<pid>/status checks for --join (the pure parts).
#include "isolation/join_target.h"

#include <catch2/catch.hpp>

#include <string>

using namespace cellgate::isolation;

namespace {

const char* kRunning =
    R"({"state":"running","helper_pid":100,"init_pid":102,"kernel_pid":103,"host_uid":201000,"cgroup":"/sys/fs/cgroup/cellgate/k"})";

std::string proc_status(const std::string& ppid, const std::string& nspid, const std::string& uid) {
  return "Name:\tcellgate-jail\nUmask:\t0000\nState:\tS (sleeping)\nTgid:\t102\nNgid:\t0\nPid:\t102\nPPid:\t" + ppid +
         "\nTracerPid:\t0\nUid:\t" + uid + "\nGid:\t201000\t201000\t201000\t201000\nNSpid:\t" + nspid + "\nNSpgid:\t102\t1\n";
}

JoinStatus sample() {
  auto s = parse_join_status(kRunning);
  REQUIRE(s.has_value());
  return s.value();
}

}  // namespace

TEST_CASE("join status: a running document parses", "[isolation]") {
  JoinStatus s = sample();
  CHECK(s.helper_pid == 100);
  CHECK(s.init_pid == 102);
  CHECK(s.host_uid == 201000);
  CHECK(s.cgroup == "/sys/fs/cgroup/cellgate/k");
  auto no_cgroup = parse_join_status(R"({"state":"running","helper_pid":5,"init_pid":6,"host_uid":7,"cgroup":""})");
  REQUIRE(no_cgroup.has_value());
  CHECK(no_cgroup->cgroup.empty());
}

TEST_CASE("join status: everything else is refused", "[isolation]") {
  for (const char* doc : {
           "", "{", "[]", "null", R"({"state":"exited","exit_code":0,"signal":null,"reason":""})",
           R"({"state":"failed","stage":"mount","errno":2,"message":"x"})",
           R"({"state":"running","helper_pid":100,"host_uid":1})",                      // no init_pid
           R"({"state":"running","helper_pid":100,"init_pid":1,"host_uid":1})",         // pid 1
           R"({"state":"running","helper_pid":100,"init_pid":100,"host_uid":1})",       // same pid
           R"({"state":"running","helper_pid":100,"init_pid":-5,"host_uid":1})",        // negative
           R"({"state":"running","helper_pid":100,"init_pid":"102","host_uid":1})",     // string
           R"({"state":"running","helper_pid":100,"init_pid":99999999,"host_uid":1})",  // > pid_max
           R"({"state":"running","helper_pid":100,"init_pid":102,"host_uid":0})",       // host root
           R"({"state":"running","helper_pid":100,"init_pid":102})",                    // no host_uid
           R"({"state":"running","helper_pid":100,"init_pid":102,"host_uid":5,"cgroup":7})",
       }) {
    INFO(doc);
    CHECK_FALSE(parse_join_status(doc).has_value());
  }
}

TEST_CASE("join: /proc status of the real init passes", "[isolation]") {
  CHECK(check_init_status(proc_status("100", "102\t1", "201000\t201000\t201000\t201000"), sample()).has_value());
  CHECK(check_init_status(proc_status("100", "5102\t102\t1", "201000\t201000\t201000\t201000"), sample()).has_value());
}

TEST_CASE("join: a reused or foreign pid is refused", "[isolation]") {
  const std::string uid = "201000\t201000\t201000\t201000";
  // Parent is not the helper (a reused pid, or the kernel instead of init).
  CHECK_FALSE(check_init_status(proc_status("1", "102\t1", uid), sample()).has_value());
  CHECK_FALSE(check_init_status(proc_status("1000", "102\t1", uid), sample()).has_value());
  // Not pid 1 of a nested pid namespace (a host process, or the kernel: pid 2).
  CHECK_FALSE(check_init_status(proc_status("100", "102", uid), sample()).has_value());
  CHECK_FALSE(check_init_status(proc_status("100", "102\t2", uid), sample()).has_value());
  // Another jail's uid, or root.
  CHECK_FALSE(check_init_status(proc_status("100", "102\t1", "301000\t301000\t301000\t301000"), sample()).has_value());
  CHECK_FALSE(check_init_status(proc_status("100", "102\t1", "0\t0\t0\t0"), sample()).has_value());
  CHECK_FALSE(check_init_status(proc_status("100", "102\t1", "201000\t0\t201000\t201000"), sample()).has_value());
  // Missing lines.
  CHECK_FALSE(check_init_status("Name:\tx\n", sample()).has_value());
}

TEST_CASE("join: a missing status file is refused", "[isolation]") {
  auto t = open_join_target("/nonexistent/cellgate/jail.json");
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().message.find("No such file") != std::string::npos);
}
