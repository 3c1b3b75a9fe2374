// SPDX-License-Identifier: BSD-3-Clause
// cgroup: path planning for v1 hybrid and v2, and the formatting of limits.
#include "isolation/cgroup.h"

#include <catch2/catch.hpp>

using namespace cellgate::isolation;

TEST_CASE("v1 hybrid: one dir per controller plus unified/", "[isolation]") {
  auto p = plan_cgroup_paths(CgroupLayout::kV1Hybrid, "/sys/fs/cgroup", "k1",
                             {"memory", "pids", "cpu", "cpuacct", "freezer"}, true);
  CHECK(p.memory == "/sys/fs/cgroup/memory/cellgate/k1");
  CHECK(p.pids == "/sys/fs/cgroup/pids/cellgate/k1");
  CHECK(p.cpu == "/sys/fs/cgroup/cpu/cellgate/k1");
  CHECK(p.unified == "/sys/fs/cgroup/unified/cellgate/k1");
  CHECK(p.freezer == "/sys/fs/cgroup/freezer/cellgate/k1");  // v1 pausing (v2 uses unified's cgroup.freeze)
  CHECK(p.tops.size() == 6);
  CHECK(p.tops.front() == "/sys/fs/cgroup/memory/cellgate");
  CHECK(p.owners.empty());  // no owner level: cellgate/<name>, as before
  CHECK(p.dirs.size() == 6);
  CHECK(p.dirs.back() == "/sys/fs/cgroup/unified/cellgate/k1");
}

TEST_CASE("an owner level between cellgate/ and the jail's dir, in every tree", "[isolation]") {
  auto p = plan_cgroup_paths(CgroupLayout::kV1Hybrid, "/sys/fs/cgroup", "k1", {"memory", "pids", "cpu"}, true, "u-alice");
  CHECK(p.cpu == "/sys/fs/cgroup/cpu/cellgate/u-alice/k1");
  CHECK(p.unified == "/sys/fs/cgroup/unified/cellgate/u-alice/k1");
  CHECK(p.owners == std::vector<std::string>{"/sys/fs/cgroup/memory/cellgate/u-alice", "/sys/fs/cgroup/pids/cellgate/u-alice",
                                             "/sys/fs/cgroup/cpu/cellgate/u-alice", "/sys/fs/cgroup/unified/cellgate/u-alice"});
  auto v2 = plan_cgroup_paths(CgroupLayout::kV2, "/sys/fs/cgroup", "k2", {}, false, "pool");
  CHECK(v2.tops == std::vector<std::string>{"/sys/fs/cgroup/cellgate"});
  CHECK(v2.owners == std::vector<std::string>{"/sys/fs/cgroup/cellgate/pool"});
  CHECK(v2.dirs == std::vector<std::string>{"/sys/fs/cgroup/cellgate/pool/k2"});
  CHECK(v2.memory == v2.unified);
}

TEST_CASE("a user's owner dir: distinct names, distinct dirs, all in [a-zA-Z0-9_-]", "[isolation]") {
  CHECK(user_cgroup_owner("alice") == "u-alice");
  CHECK(user_cgroup_owner("a.b") == "u-a_2eb");
  CHECK(user_cgroup_owner("a_b") == "u-a__b");
  CHECK(user_cgroup_owner("a_2eb") == "u-a__2eb");  // not "a.b"'s
  CHECK(user_cgroup_owner("..") == "u-_2e_2e");
  CHECK(valid_owner(user_cgroup_owner("..")));
  CHECK(valid_owner(user_cgroup_owner(std::string(64, '.'))));
  const std::string hashed = user_cgroup_owner(std::string(300, '/'));
  CHECK(hashed.starts_with("h-"));
  CHECK(valid_owner(hashed));
  CHECK_FALSE(valid_owner("cellgate"));
  CHECK_FALSE(valid_owner(""));
  CHECK_FALSE(valid_owner("a/b"));
  CHECK_FALSE(valid_owner(".."));
  CHECK(cpu_shares_for_weight(100) == 1024);
  CHECK(cpu_shares_for_weight(25) == 256);
  CHECK(cpu_shares_for_weight(1) == 10);
  CHECK(cpu_shares_for_weight(10000) == 102400);
}

TEST_CASE("v1 without unified/ has no cgroup.kill dir", "[isolation]") {
  auto p = plan_cgroup_paths(CgroupLayout::kV1Hybrid, "/cg", "k", {"memory", "pids"}, false);
  CHECK(p.unified.empty());
  CHECK(p.cpu.empty());
  CHECK(p.freezer.empty());
}

TEST_CASE("v2: one leaf dir holds every limit", "[isolation]") {
  auto p = plan_cgroup_paths(CgroupLayout::kV2, "/sys/fs/cgroup", "k2", {}, false);
  CHECK(p.tops == std::vector<std::string>{"/sys/fs/cgroup/cellgate"});
  CHECK(p.dirs == std::vector<std::string>{"/sys/fs/cgroup/cellgate/k2"});
  CHECK(p.unified == "/sys/fs/cgroup/cellgate/k2");
  CHECK(p.memory == p.unified);
  CHECK(p.freezer.empty());
}

TEST_CASE("limit formatting", "[isolation]") {
  CHECK(human_bytes(512ULL << 20) == "512 MiB");
  CHECK(human_bytes(1ULL << 30) == "1 GiB");
  CHECK(human_bytes(3ULL << 29) == "1536 MiB");
  CHECK(human_bytes(1000) == "1000 bytes");
  CHECK(cpu_quota_us(1) == 100000);
  CHECK(cpu_quota_us(0.5) == 50000);
}
