// SPDX-License-Identifier: BSD-3-Clause
// status_json: the contract's status/ready documents, checked with a real JSON parser.
#include "isolation/status_json.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

using namespace cellgate::isolation;
using nlohmann::json;

TEST_CASE("running, failed and exited documents have the contract's fields", "[isolation]") {
  json r = json::parse(running_json(10, 11, 12, 201000, "/sys/fs/cgroup/unified/cellgate/k"));
  CHECK(r == json{{"state", "running"}, {"helper_pid", 10}, {"init_pid", 11}, {"kernel_pid", 12},
                  {"host_uid", 201000}, {"cgroup", "/sys/fs/cgroup/unified/cellgate/k"}});
  json f = json::parse(failed_json("pivot_root", 2, "pivot_root: No such file or directory"));
  CHECK(f == json{{"state", "failed"}, {"stage", "pivot_root"}, {"errno", 2},
                  {"message", "pivot_root: No such file or directory"}});
  json e = json::parse(exited_json(std::nullopt, 9, "memory limit 512 MiB exceeded"));
  CHECK(e["state"] == "exited");
  CHECK(e["exit_code"].is_null());
  CHECK(e["signal"] == 9);
  CHECK(e["reason"] == "memory limit 512 MiB exceeded");
  json ok = json::parse(exited_json(0, std::nullopt, ""));
  CHECK(ok["exit_code"] == 0);
  CHECK(ok["signal"].is_null());
}

TEST_CASE("strings are escaped", "[isolation]") {
  const std::string nasty = "a\"b\\c\nd\te\x01 \xc3\xa9";
  CHECK(json::parse(json_string(nasty)) == nasty);
}

TEST_CASE("the status file is replaced atomically and the ready fd gets one line", "[isolation]") {
  char tmpl[] = "/tmp/cellgate-status-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string path = std::string(tmpl) + "/status.json";
  REQUIRE(write_status_file(path, exited_json(1, std::nullopt, "")));
  REQUIRE(write_status_file(path, exited_json(3, std::nullopt, "")));
  std::ifstream in(path);
  json doc = json::parse(in);
  CHECK(doc["exit_code"] == 3);
  CHECK(std::distance(std::filesystem::directory_iterator(tmpl), std::filesystem::directory_iterator()) == 1);
  CHECK_FALSE(write_status_file(std::string(tmpl) + "/missing/dir/s.json", "{}"));
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  write_ready_line(fds[1], failed_json("exec", 2, "exec x: No such file or directory"));
  char buf[256] = {};
  ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  REQUIRE(n > 0);
  CHECK(buf[n - 1] == '\n');
  CHECK(::read(fds[0], buf, sizeof buf) == 0);  // write_ready_line closed the write end
  ::close(fds[0]);
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("the status write uses fresh temp names and leaves no temp behind", "[isolation]") {
  char tmpl[] = "/tmp/cellgate-status-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string path = std::string(tmpl) + "/status.json";
  REQUIRE(::mkfifo((path + ".tmp." + std::to_string(::getpid())).c_str(), 0666) == 0);  // an old-style guess
  REQUIRE(write_status_file(path, exited_json(5, std::nullopt, "")));
  REQUIRE(write_status_file(path, exited_json(6, std::nullopt, "")));
  std::ifstream in(path);
  CHECK(json::parse(in)["exit_code"] == 6);
  CHECK(std::distance(std::filesystem::directory_iterator(tmpl), std::filesystem::directory_iterator()) == 2);
  std::filesystem::remove_all(tmpl);
}
