// SPDX-License-Identifier: BSD-3-Clause
// mount_plan: the jail's root file system as an ordered list of child::MountOp (built in the parent).
#include "isolation/mount_plan.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "isolation/etc_secrets.h"

namespace cellgate::isolation {
namespace {

using child::MountOp;
using child::MountOpType;
using common::Errc;
using common::make_error;

constexpr uint64_t kRo = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
constexpr uint64_t kRw = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

// Docker's masked and read-only /proc paths (moby oci/defaults.go).
constexpr const char* kProcMaskFiles[] = {"kcore", "keys", "latency_stats", "timer_list", "timer_stats",
                                          "sched_debug"};
constexpr const char* kProcMaskDirs[] = {"acpi", "scsi"};
constexpr const char* kProcReadOnly[] = {"bus", "fs", "irq", "sys", "sysrq-trigger"};
constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
constexpr const char* kRootLinks[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

std::string parent_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

bool clean_absolute(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.size() > 1024) return false;
  return p.find("/../") == std::string::npos && !p.ends_with("/..") && p.find("//") == std::string::npos &&
         p.find("/./") == std::string::npos;
}

// Inside paths a bind may not land on: the mechanism owns them (and /workspace is the user's
// tree, where setup would create root-owned mount points).
bool reserved_target(const std::string& p) {
  for (const char* r : {"/usr", "/proc", "/dev", "/workspace", "/tmp/.config"}) {
    std::string_view root(r);
    if (p == root || (p.starts_with(root) && p[root.size()] == '/')) return true;
  }
  return p == "/" || p == "/tmp" || p == "/etc";
}

// A bind source that is, lies in or holds a secret path is refused, as written and as resolved
// (a bind follows links), whoever asked for it.
std::optional<common::Error> refuse_secret(const std::string& what, const std::string& path, const HostEntry& e) {
  for (const std::string* p : {&path, &e.real_path}) {
    std::string_view secret = p->empty() ? std::string_view() : overlapping_secret(*p);
    if (!secret.empty())
      return make_error(Errc::kBadRequest, what + " " + path + " would bring " + std::string(secret) +
                                               " into the jail: host secrets are never bound");
  }
  return std::nullopt;
}

}  // namespace

HostEntry probe_host_path(const std::string& path) {
  struct stat st {};
  HostEntry e;
  if (::lstat(path.c_str(), &st) < 0) return e;
  if (S_ISDIR(st.st_mode)) {
    e.kind = HostEntry::Kind::kDir;
  } else if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return e;
    e.kind = HostEntry::Kind::kSymlink;
    e.link_target.assign(buf, static_cast<size_t>(n));
    e.target_is_dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  } else {
    e.kind = HostEntry::Kind::kFile;
  }
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    e.real_path = real;
    std::free(real);
  }
  return e;
}

bool is_generated_etc_file(std::string_view path) {
  if (!path.starts_with("/etc/")) return false;
  for (const auto& [name, text] : generated_etc_files("")) {
    if (path.substr(5) == name) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> generated_etc_files(const std::string& hostname) {
  return {
      {"passwd",
       "root:x:0:0:root:/root:/bin/bash\n"
       "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"
       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
      {"group", "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"},
      {"hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname + "\n"},
      {"hostname", hostname + "\n"},
      {"nsswitch.conf",
       "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n"
       "protocols: files\nservices: files\nethers: files\nrpc: files\n"},
      {"resolv.conf", ""},
  };
}

const char* MountPlan::keep(std::string s) {
  strings_.push_back(std::move(s));
  return strings_.back().c_str();
}

MountOp MountPlan::op(MountOpType type, const std::string& inside_target) {
  MountOp o{};
  o.type = type;
  o.target = keep(root_ + inside_target);
  o.owner = -1;
  o.fd = -1;
  return o;
}

void MountPlan::mkdir_p(const std::string& inside, int owner, uint32_t mode) {
  if (inside == "/" || dirs_.count(inside) > 0) return;
  mkdir_p(parent_of(inside));
  MountOp o = op(MountOpType::kMkdir, inside);
  o.mode = mode;
  o.owner = owner;
  add(o);
  dirs_.insert(inside);
}

void MountPlan::bind(const std::string& source, const std::string& inside, const HostEntry& entry, uint64_t attrs) {
  if (entry.kind == HostEntry::Kind::kSymlink) {
    mkdir_p(parent_of(inside));
    MountOp o = op(MountOpType::kSymlink, inside);
    o.source = keep(entry.link_target);
    add(o);
    return;
  }
  if (entry.kind == HostEntry::Kind::kDir) {
    mkdir_p(inside);
  } else {
    mkdir_p(parent_of(inside));
    MountOp t = op(MountOpType::kTouch, inside);
    t.mode = 0644;
    add(t);
  }
  MountOp o = op(MountOpType::kBind, inside);
  o.source = keep(source);
  o.attr_set = attrs;
  o.recursive = true;
  add(o);
}

common::Result<MountPlan> MountPlan::build(const MountInputs& in, const HostProbe& probe) {
  MountPlan p;
  p.root_ = in.new_root;
  const std::string size = std::to_string(in.tmp_size);

  MountOp root = p.op(MountOpType::kTmpfs, "");
  root.target = p.keep(in.new_root);
  root.flags = MS_NOSUID | MS_NODEV;
  root.data = p.keep("mode=0755,size=16m");
  p.add(root);

  // /usr read-only; /bin, /lib… as the host has them (symlinks on merged-/usr Debian).
  p.bind("/usr", "/usr", probe("/usr"), kRo);
  for (const char* link : kRootLinks) {
    HostEntry e = probe(link);
    if (e.kind != HostEntry::Kind::kMissing) p.bind(link, link, e, kRo);
  }

  p.mkdir_p("/etc");
  for (const auto& [name, text] : generated_etc_files(in.hostname)) {
    MountOp o = p.op(MountOpType::kWriteFile, "/etc/" + name);
    o.data = p.keep(text);
    o.data_len = text.size();
    o.mode = 0644;
    p.add(o);
  }
  for (const auto& list : {in.etc_binds, in.cache_binds}) {
    for (const auto& path : list) {
      if (!clean_absolute(path)) return make_error(Errc::kBadRequest, "bad bind path \"" + path + "\"");
      if (is_generated_etc_file(path))
        return make_error(Errc::kBadRequest, "bind path " + path + " is generated by the jail, never the host's");
      HostEntry e = probe(path);
      if (auto refused = refuse_secret("bind path", path, e)) return *refused;
      if (e.kind != HostEntry::Kind::kMissing) p.bind(path, path, e, kRo);
    }
  }

  // /proc of the jail's pid namespace; user namespaces are switched off from inside first.
  p.mkdir_p("/proc");
  MountOp proc = p.op(MountOpType::kProc, "/proc");
  proc.flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  p.add(proc);
  MountOp maxns = p.op(MountOpType::kWriteExisting, "/proc/sys/user/max_user_namespaces");
  maxns.data = "0";
  maxns.data_len = 1;
  p.add(maxns);
  for (const char* f : kProcMaskFiles) {
    MountOp o = p.op(MountOpType::kBind, std::string("/proc/") + f);
    o.source = "/dev/null";
    o.optional = true;
    p.add(o);
  }
  for (const char* d : kProcMaskDirs) {
    MountOp o = p.op(MountOpType::kTmpfs, std::string("/proc/") + d);
    o.flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
    o.data = "size=4k,mode=0555";
    o.optional = true;
    p.add(o);
  }
  for (const char* r : kProcReadOnly) {
    MountOp o = p.op(MountOpType::kBind, std::string("/proc/") + r);
    o.source = o.target;
    o.attr_set = kRo | MOUNT_ATTR_NOEXEC;
    o.recursive = true;
    o.optional = true;
    p.add(o);
  }

  // /dev: device nodes are bind-mounted (mknod is impossible in a user namespace).
  p.mkdir_p("/dev");
  MountOp dev = p.op(MountOpType::kTmpfs, "/dev");
  dev.flags = MS_NOSUID | MS_NOEXEC;
  dev.data = "mode=0755,size=64k";
  p.add(dev);
  for (const char* node : kDevNodes) {
    MountOp t = p.op(MountOpType::kTouch, std::string("/dev/") + node);
    t.mode = 0666;
    p.add(t);
    MountOp b = p.op(MountOpType::kBind, std::string("/dev/") + node);
    b.source = p.keep(std::string("/dev/") + node);
    b.optional = true;  // a host without /dev/tty (some containers) still gets a jail
    p.add(b);
  }
  for (const char* d : {"/dev/pts", "/dev/shm"}) {
    MountOp o = p.op(MountOpType::kMkdir, d);
    o.mode = 0755;
    p.add(o);
  }
  MountOp pts = p.op(MountOpType::kDevpts, "/dev/pts");
  pts.flags = MS_NOSUID | MS_NOEXEC;
  pts.data = "newinstance,ptmxmode=0666,mode=0620";
  p.add(pts);
  MountOp shm = p.op(MountOpType::kTmpfs, "/dev/shm");
  shm.flags = MS_NOSUID | MS_NODEV;
  shm.data = p.keep("mode=1777,size=" + size);
  p.add(shm);
  for (auto [name, target] : {std::pair{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
                              {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}}) {
    MountOp o = p.op(MountOpType::kSymlink, std::string("/dev/") + name);
    o.source = target;
    p.add(o);
  }
  MountOp dev_ro = p.op(MountOpType::kSetAttr, "/dev");
  dev_ro.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
  p.add(dev_ro);

  // /tmp, with a writable matplotlib config dir pre-seeded with the host's font list cache.
  p.mkdir_p("/tmp");
  MountOp tmp = p.op(MountOpType::kTmpfs, "/tmp");
  tmp.flags = MS_NOSUID | MS_NODEV;
  tmp.data = p.keep("mode=1777,size=" + size);
  p.add(tmp);
  p.dirs_.insert("/tmp/.config");
  for (const char* d : {"/tmp/.config", "/tmp/.config/matplotlib"}) {
    MountOp o = p.op(MountOpType::kMkdir, d);
    o.mode = 0755;
    o.owner = kSandboxId;
    p.add(o);
  }
  for (const auto& [name, text] : in.mpl_files) {
    if (name.find('/') != std::string::npos) continue;
    MountOp o = p.op(MountOpType::kWriteFile, "/tmp/.config/matplotlib/" + name);
    o.data = p.keep(text);
    o.data_len = text.size();
    o.mode = 0644;
    o.owner = kSandboxId;
    p.add(o);
  }

  p.mkdir_p("/workspace");
  auto add_rw = [&p](const RwBind& b, const std::string& inside) {
    p.mkdir_p(inside);
    MountOp o = p.op(b.tree_fd >= 0 ? MountOpType::kMoveTree : MountOpType::kBind, inside);
    o.fd = b.tree_fd;
    o.source = p.keep(b.path);
    o.attr_set = b.tree_fd >= 0 ? 0 : kRw;  // the parent set the tree's attributes with the idmap
    o.recursive = true;
    p.add(o);
  };
  if (in.workspace) {
    if (auto refused = refuse_secret("--workspace", in.workspace->path, {})) return *refused;
    add_rw(*in.workspace, "/workspace");
  } else {
    MountOp ws = p.op(MountOpType::kTmpfs, "/workspace");
    ws.flags = MS_NOSUID | MS_NODEV;
    ws.data = p.keep("mode=0755,uid=1000,gid=1000,size=" + size);
    p.add(ws);
  }
  for (const auto& b : in.bind_same) {
    if (!clean_absolute(b.path) || reserved_target(b.path))
      return make_error(Errc::kBadRequest, "bad --bind-same dir \"" + b.path + "\"");
    if (auto refused = refuse_secret("--bind-same dir", b.path, {})) return *refused;
    add_rw(b, b.path);
  }
  for (const auto& b : in.ro_binds) {
    if (!clean_absolute(b.source) || !clean_absolute(b.target) || reserved_target(b.target))
      return make_error(Errc::kBadRequest, "bad read-only bind \"" + b.source + ":" + b.target + "\"");
    HostEntry e = probe(b.source);
    if (e.kind == HostEntry::Kind::kMissing)
      return make_error(Errc::kBadRequest, "read-only bind source " + b.source + " does not exist");
    if (auto refused = refuse_secret("read-only bind source", b.source, e)) return *refused;
    if (e.kind == HostEntry::Kind::kSymlink)  // a bind follows the link
      e.kind = e.target_is_dir ? HostEntry::Kind::kDir : HostEntry::Kind::kFile;
    p.bind(b.source, b.target, e, kRo);
  }
  return p;
}

}  // namespace cellgate::isolation
