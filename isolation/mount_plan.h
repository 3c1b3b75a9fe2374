// SPDX-License-Identifier: BSD-3-Clause
// mount_plan: the jail's root file system as an ordered list of child::MountOp (built in the parent).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "isolation/child/run_child.h"
#include "isolation/jail_options.h"

namespace cellgate::isolation {

constexpr int kSandboxId = 1000;  // inside uid and gid of `sandbox`

// What a host path is, for planning (lstat; symlinks keep their target).
struct HostEntry {
  enum class Kind { kMissing, kDir, kFile, kSymlink } kind = Kind::kMissing;
  std::string link_target;
  bool target_is_dir = false;  // for symlinks: what the link resolves to
  std::string real_path;       // realpath(3) of the path (what a bind would mount); empty if unknown
};
using HostProbe = std::function<HostEntry(const std::string& path)>;
HostEntry probe_host_path(const std::string& path);  // the real one (lstat + readlink)

struct RwBind {
  std::string path;  // host path (and, for bind-same, the inside path)
  int tree_fd = -1;  // detached open_tree() clone (idmapped by the parent), or -1: plain bind
};

struct MountInputs {
  std::string new_root;            // host dir the root tmpfs is mounted on
  std::string hostname;
  uint64_t tmp_size = 0;           // /tmp and /dev/shm, and a tmpfs /workspace
  std::optional<RwBind> workspace; // unset: tmpfs /workspace
  std::vector<RwBind> bind_same;
  std::vector<BindSpec> ro_binds;  // policy's, then the command line's
  std::vector<std::string> etc_binds;
  std::vector<std::string> cache_binds;
  std::vector<std::pair<std::string, std::string>> mpl_files;  // name, contents
};

class MountPlan {
 public:
  // Errors (kBadRequest): a missing --ro-bind source, a bad target.
  static common::Result<MountPlan> build(const MountInputs& in, const HostProbe& probe);
  const std::vector<child::MountOp>& ops() const { return ops_; }
  MountPlan() = default;
  MountPlan(MountPlan&&) = default;
  MountPlan& operator=(MountPlan&&) = default;

 private:
  const char* keep(std::string s);
  void mkdir_p(const std::string& inside, int owner = -1, uint32_t mode = 0755);
  void add(child::MountOp op) { ops_.push_back(op); }
  child::MountOp op(child::MountOpType type, const std::string& inside_target);
  void bind(const std::string& source, const std::string& inside, const HostEntry& entry, uint64_t attrs);

  std::string root_;
  std::deque<std::string> strings_;  // stable storage for the ops' pointers
  std::set<std::string> dirs_;
  std::vector<child::MountOp> ops_;
};

// The generated /etc files (passwd, group, hosts, hostname, nsswitch.conf, resolv.conf).
std::vector<std::pair<std::string, std::string>> generated_etc_files(const std::string& hostname);
// True for "/etc/<one of them>": a bind must not put the host's copy (its accounts, its network) over them.
bool is_generated_etc_file(std::string_view path);

}  // namespace cellgate::isolation
