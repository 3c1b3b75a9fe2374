// SPDX-License-Identifier: BSD-3-Clause
// cgroup_paths: where one jail's cgroup dirs go (pure), and how names and sizes are written.
#include "isolation/cgroup_paths.h"

#include <algorithm>
#include <cmath>

namespace cellgate::isolation {
namespace {

constexpr uint64_t kCpuPeriodUs = 100000;
constexpr size_t kMaxOwner = 200;

bool plain(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'; }

}  // namespace

CgroupPaths plan_cgroup_paths(CgroupLayout layout, const std::string& base, const std::string& name,
                              const std::vector<std::string>& v1_controllers, bool has_unified, const std::string& owner) {
  CgroupPaths p;
  p.layout = layout;
  const std::string mid = owner.empty() ? "" : "/" + owner;
  const std::string leaf = "/cellgate" + mid + "/" + name;
  // One tree: its top, its owner level (if any) and the jail's own dir.
  auto tree = [&](const std::string& root) {
    p.tops.push_back(root + "/cellgate");
    if (!owner.empty()) p.owners.push_back(root + "/cellgate" + mid);
    p.dirs.push_back(root + leaf);
    return root + leaf;
  };
  if (layout == CgroupLayout::kV2) {
    p.unified = p.memory = p.pids = p.cpu = tree(base);
    return p;
  }
  for (const auto& ctl : v1_controllers) {
    const std::string dir = tree(base + "/" + ctl);
    if (ctl == "memory") p.memory = dir;
    if (ctl == "pids") p.pids = dir;
    if (ctl == "cpu") p.cpu = dir;
    if (ctl == "freezer") p.freezer = dir;
  }
  if (has_unified) p.unified = tree(base + "/unified");
  return p;
}

bool valid_owner(std::string_view owner) {
  return !owner.empty() && owner.size() <= kMaxOwner && owner != "cellgate" &&
         std::all_of(owner.begin(), owner.end(), [](char c) { return plain(c) || c == '_'; });
}

std::string user_cgroup_owner(std::string_view user) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "u-";
  for (char c : user) {
    const auto b = static_cast<unsigned char>(c);
    if (plain(c)) out += c;
    else if (c == '_') out += "__";
    else out += {'_', kHex[b >> 4], kHex[b & 15]};
  }
  if (out.size() <= kMaxOwner) return out;
  uint64_t h = 14695981039346656037ULL;  // FNV-1a
  for (char c : user) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::string hashed = "h-";
  for (int shift = 60; shift >= 0; shift -= 4) hashed += kHex[(h >> shift) & 15];
  return hashed;
}

uint64_t cpu_shares_for_weight(uint32_t weight) {
  return std::clamp<uint64_t>((uint64_t{weight} * 1024 + 50) / 100, 2, 262144);
}

std::string human_bytes(uint64_t bytes) {
  constexpr uint64_t kMiB = 1ULL << 20, kGiB = 1ULL << 30;
  if (bytes >= kGiB && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + " GiB";
  if (bytes >= kMiB) return std::to_string((bytes + kMiB / 2) / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

uint64_t socket_memory_limit(uint64_t memory) { return std::max<uint64_t>(memory / 4, uint64_t{16} << 20); }

uint64_t cpu_quota_us(double cores) {
  return static_cast<uint64_t>(std::llround(cores * static_cast<double>(kCpuPeriodUs)));
}

}  // namespace cellgate::isolation
