// SPDX-License-Identifier: BSD-3-Clause
// seccomp_policy: the exported filter, checked through libseccomp's PFC text and the BPF.
#include "isolation/seccomp_policy.h"

#include <catch2/catch.hpp>

#include <sys/ioctl.h>

#include <cstring>
#include <filesystem>
#include <random>

using namespace cellgate::isolation;

namespace {
// The PFC block of one syscall: from its "filter for syscall" comment to the next one.
std::string block(const std::string& pfc, const std::string& name) {
  size_t start = pfc.find("filter for syscall \"" + name + "\"");
  if (start == std::string::npos) return "";
  size_t end = pfc.find("filter for syscall", start + 1);
  return pfc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}
}  // namespace

TEST_CASE("the default filter: allowlist, EPERM denies, ENOSYS default, bad arch kills", "[isolation]") {
  auto policy = default_policy();
  REQUIRE(policy);
  auto pfc = build_seccomp_pfc(*policy);
  REQUIRE(pfc);
  CHECK(pfc->find("action ERRNO(38);") != std::string::npos);  // default ENOSYS
  CHECK(pfc->find("action KILL_PROCESS;") != std::string::npos);  // bad arch
  CHECK(block(*pfc, "read").find("action ALLOW;") != std::string::npos);
  for (const char* denied : {"ptrace", "mount", "unshare", "bpf", "io_uring_setup", "keyctl", "open_tree"}) {
    INFO(denied);
    CHECK(block(*pfc, denied).find("action ERRNO(1);") != std::string::npos);
  }
  CHECK(block(*pfc, "clone3").empty());  // falls to the ENOSYS default so glibc uses clone
  const std::string clone = block(*pfc, "clone");
  CHECK(clone.find("0x7e020000 == 0") != std::string::npos);
  CHECK(clone.find("action ERRNO(1);") != std::string::npos);
  const std::string ioctl = block(*pfc, "ioctl");
  CHECK(ioctl.find("== 21522") != std::string::npos);  // TIOCSTI denied (EPERM rule)
  CHECK(ioctl.find("action ERRNO(1);") != std::string::npos);
  CHECK(block(*pfc, "personality").find("== 131080") != std::string::npos);
  auto bpf = build_seccomp_bpf(*policy);
  REQUIRE(bpf);
  CHECK(bpf->size() > 100);
  CHECK(bpf->size() < 4096);
}

TEST_CASE("policy allows and denies change the filter, unknown names are errors", "[isolation]") {
  auto base = default_policy();
  REQUIRE(base);
  auto p = layer_policy(base.value(), R"({"seccomp": {"allow": ["ptrace", "ioctl"], "deny": ["mremap"]}})");
  REQUIRE(p);
  auto pfc = build_seccomp_pfc(*p);
  REQUIRE(pfc);
  CHECK(block(*pfc, "ptrace").find("action ALLOW;") != std::string::npos);
  CHECK(block(*pfc, "mremap").find("action ERRNO(1);") != std::string::npos);
  CHECK(block(*pfc, "ioctl").find("21522") == std::string::npos);  // explicit allow: unconditional
  auto bad = layer_policy(base.value(), R"({"seccomp": {"deny": ["no_such_syscall"]}})");
  REQUIRE(bad);
  auto r = build_seccomp_bpf(*bad);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("no_such_syscall") != std::string::npos);
}

TEST_CASE("complement_cover matches exactly the values not excluded", "[isolation]") {
  const std::vector<uint32_t> excluded = {TIOCSTI, TIOCLINUX};
  auto cover = complement_cover(excluded);
  CHECK(cover.size() < 80);
  auto covered = [&](uint32_t v) {
    int hits = 0;
    for (auto [mask, value] : cover) hits += (v & mask) == value;
    return hits;
  };
  CHECK(covered(TIOCSTI) == 0);
  CHECK(covered(TIOCLINUX) == 0);
  std::mt19937 rng(42);
  for (uint32_t v : {0U, 1U, 0x5401U, 0x5413U, 0x541BU, 0x541DU, 0xFFFFFFFFU, 0x80005412U}) CHECK(covered(v) == 1);
  for (int i = 0; i < 10000; ++i) {
    uint32_t v = rng();
    if (v == TIOCSTI || v == TIOCLINUX) continue;
    REQUIRE(covered(v) == 1);  // exactly one rule: the cover is a partition
  }
  CHECK(complement_cover({}).size() == 1);
}

TEST_CASE("the BPF cache returns the built program and keys on the policy", "[isolation]") {
  auto base = default_policy();
  REQUIRE(base);
  auto other = layer_policy(base.value(), R"({"seccomp": {"deny": ["mremap"]}})");
  REQUIRE(other);
  CHECK(seccomp_cache_key(*base) == seccomp_cache_key(*base));
  CHECK(seccomp_cache_key(*base) != seccomp_cache_key(*other));
  char tmpl[] = "/tmp/cellgate-bpf-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = std::string(tmpl) + "/cache";
  auto built = build_seccomp_bpf(*base);
  auto first = cached_seccomp_bpf(*base, dir);  // miss: builds and stores
  auto second = cached_seccomp_bpf(*base, dir);  // hit: reads the file
  REQUIRE(built);
  REQUIRE(first);
  REQUIRE(second);
  REQUIRE(second->size() == built->size());
  CHECK(std::memcmp(second->data(), built->data(), built->size() * sizeof(sock_filter)) == 0);
  auto third = cached_seccomp_bpf(*other, dir);
  REQUIRE(third);
  REQUIRE(third->size() == built->size());  // mremap only changes its action
  CHECK(std::memcmp(third->data(), built->data(), built->size() * sizeof(sock_filter)) != 0);
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("check_syscall_names accepts real names and names the unknown one", "[isolation]") {
  auto base = default_policy();
  REQUIRE(base);
  CHECK(check_syscall_names(*base));
  auto bad = layer_policy(base.value(), R"({"seccomp": {"allow": ["getpid", "frobnicate"]}})");
  REQUIRE(bad);
  auto r = check_syscall_names(*bad);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("frobnicate") != std::string::npos);
}
