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
  CHECK(p.dirs.size() == 12);
  CHECK(p.dirs.front() == "/sys/fs/cgroup/memory/cellgate");  // parents before children
  CHECK(p.dirs.back() == "/sys/fs/cgroup/unified/cellgate/k1");
}

TEST_CASE("v1 without unified/ has no cgroup.kill dir", "[isolation]") {
  auto p = plan_cgroup_paths(CgroupLayout::kV1Hybrid, "/cg", "k", {"memory", "pids"}, false);
  CHECK(p.unified.empty());
  CHECK(p.cpu.empty());
  CHECK(p.freezer.empty());
}

TEST_CASE("v2: one leaf dir holds every limit", "[isolation]") {
  auto p = plan_cgroup_paths(CgroupLayout::kV2, "/sys/fs/cgroup", "k2", {}, false);
  CHECK(p.dirs == std::vector<std::string>{"/sys/fs/cgroup/cellgate", "/sys/fs/cgroup/cellgate/k2"});
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
