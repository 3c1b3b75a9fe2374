// SPDX-License-Identifier: BSD-3-Clause
// seccomp_policy: build the filter with libseccomp in the parent, export it as BPF.
#include "isolation/seccomp_policy.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include <seccomp.h>

#include "common/unique_fd.h"
#include "isolation/syscall_lists.h"

namespace cellgate::isolation {
namespace {

using common::Errc;
using common::make_error;
using Ctx = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

// Docker's mask of CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET.
constexpr uint32_t kCloneNewMask = 0x7E020000;
constexpr int kAfVsock = 40;

common::Error seccomp_error(const std::string& what, int rc) {
  return make_error(Errc::kInternal, "seccomp: " + what + ": " + std::strerror(-rc), -rc);
}

void cover(uint32_t prefix, int depth, const std::vector<uint32_t>& excluded,
           std::vector<std::pair<uint32_t, uint32_t>>& out) {
  uint32_t mask = depth == 0 ? 0 : ~((1ULL << (32 - depth)) - 1) & 0xFFFFFFFFU;
  bool any = false;
  for (uint32_t v : excluded) any = any || (v & mask) == prefix;
  if (!any) {
    out.emplace_back(mask, prefix);
    return;
  }
  if (depth == 32) return;  // exactly an excluded value
  uint32_t bit = 1U << (31 - depth);
  cover(prefix, depth + 1, excluded, out);
  cover(prefix | bit, depth + 1, excluded, out);
}

int add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n, const scmp_arg_cmp* cmp) {
  return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

common::Result<int> resolve(const std::string& name, bool must_exist) {
  int nr = seccomp_syscall_resolve_name(name.c_str());
  if (nr == __NR_SCMP_ERROR) {
    if (must_exist) return make_error(Errc::kBadRequest, "seccomp: unknown syscall \"" + name + "\"");
    return -1;
  }
  return nr;  // negative: a pseudo number for a syscall x86_64 does not have
}

common::Status add_conditional(scmp_filter_ctx ctx, const std::string& name, int nr) {
  const uint32_t allow = SCMP_ACT_ALLOW, eperm = SCMP_ACT_ERRNO(EPERM);
  auto check = [&](int rc) -> common::Status {
    if (rc < 0) return seccomp_error("rule for " + name, rc);
    return common::ok();
  };
  if (name == "clone") {
    scmp_arg_cmp ok_cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneNewMask, 0);
    if (auto s = check(add(ctx, allow, nr, 1, &ok_cmp)); !s) return s;
    for (uint32_t bit = 1; bit != 0; bit <<= 1) {
      if ((kCloneNewMask & bit) == 0) continue;
      scmp_arg_cmp deny_cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit);
      if (auto s = check(add(ctx, eperm, nr, 1, &deny_cmp)); !s) return s;
    }
  } else if (name == "clone3") {
    // ENOSYS, not EPERM, so glibc falls back to clone(2), whose flags we can inspect. That is
    // the default action already, and libseccomp refuses (EACCES) a rule equal to the default.
    return common::ok();
  } else if (name == "ioctl") {
    // The command is an unsigned int: compare the low 32 bits only, or 1<<32|TIOCSTI passes.
    const std::vector<uint32_t> denied = {TIOCSTI, TIOCLINUX};
    for (auto [mask, value] : complement_cover(denied)) {
      scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, mask, value);
      if (auto s = check(add(ctx, allow, nr, 1, &c)); !s) return s;
    }
    for (uint32_t cmd : denied) {
      scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFU, cmd);
      if (auto s = check(add(ctx, eperm, nr, 1, &c)); !s) return s;
    }
  } else if (name == "personality") {
    // Docker's values: PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32, and the query.
    for (uint64_t persona : {0x0ULL, 0x8ULL, 0x20000ULL, 0x20008ULL, 0xFFFFFFFFULL}) {
      scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, persona);
      if (auto s = check(add(ctx, allow, nr, 1, &c)); !s) return s;
    }
  } else if (name == "socket") {
    scmp_arg_cmp ok_cmp = SCMP_A0(SCMP_CMP_NE, kAfVsock);
    if (auto s = check(add(ctx, allow, nr, 1, &ok_cmp)); !s) return s;
    scmp_arg_cmp deny_cmp = SCMP_A0(SCMP_CMP_EQ, kAfVsock);
    return check(add(ctx, eperm, nr, 1, &deny_cmp));
  }
  return common::ok();
}

common::Result<Ctx> build_ctx(const Policy& policy) {
  Ctx ctx(seccomp_init(SCMP_ACT_ERRNO(ENOSYS)), seccomp_release);
  if (!ctx) return make_error(Errc::kInternal, "seccomp: seccomp_init failed");
  // Only the native arch is in the filter, so i386 (int 0x80) and x32 syscalls hit the
  // bad-arch action: kill the whole process, not just the thread.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc < 0)
    return seccomp_error("bad-arch action", rc);
  SyscallSets sets = effective_syscalls(policy);
  for (const auto& [name, allowed] : policy.seccomp_changes) {
    if (auto r = resolve(name, true); !r) return r.error();
  }
  for (const auto& name : sets.deny) {
    auto nr = resolve(name, true);
    if (!nr) return nr.error();
    if (*nr < 0) continue;
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), *nr, 0); rc < 0)
      return seccomp_error("deny " + name, rc);
  }
  for (const auto& name : sets.allow) {
    auto nr = resolve(name, sets.explicit_allow.count(name) > 0);
    if (!nr) return nr.error();
    if (*nr < 0) continue;  // unknown to libseccomp 2.5.4 or not on x86_64: stays ENOSYS
    bool conditional = is_conditional_syscall(name) && sets.explicit_allow.count(name) == 0;
    if (conditional) {
      if (auto s = add_conditional(ctx.get(), name, *nr); !s) return s.error();
    } else if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, *nr, 0); rc < 0) {
      return seccomp_error("allow " + name, rc);
    }
  }
  return ctx;
}

common::Result<std::string> export_to_memfd(scmp_filter_ctx ctx, bool pfc) {
  common::UniqueFd fd(memfd_create("cellgate-seccomp", MFD_CLOEXEC));
  if (!fd) return make_error(Errc::kInternal, std::string("memfd_create: ") + std::strerror(errno), errno);
  int rc = pfc ? seccomp_export_pfc(ctx, fd.get()) : seccomp_export_bpf(ctx, fd.get());
  if (rc < 0) return seccomp_error("export", rc);
  std::string out;
  char buf[16384];
  for (off_t off = 0;;) {
    ssize_t n = pread(fd.get(), buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(Errc::kInternal, std::string("read seccomp export: ") + std::strerror(errno), errno);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    off += n;
    if (out.size() > (1U << 22)) return make_error(Errc::kInternal, "seccomp export larger than 4 MiB");
  }
  return out;
}

// Bounds the cache: past kMaxCached entries (rebuilt binaries leave old keys behind), every
// other entry goes; the next jails rebuild what they need.
void prune_cache(const std::string& dir, const std::string& keep) {
  constexpr size_t kMaxCached = 32;
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.ends_with(".bpf") && names.size() <= 4 * kMaxCached) names.push_back(dir + "/" + name);
    }
    ::closedir(d);
  }
  if (names.size() <= kMaxCached) return;
  for (const auto& n : names) {
    if (n != keep) ::unlink(n.c_str());
  }
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> complement_cover(const std::vector<uint32_t>& excluded) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  cover(0, 0, excluded, out);
  return out;
}

SyscallSets effective_syscalls(const Policy& policy) {
  SyscallSets sets;
  for (std::string_view name : docker_default_syscalls()) sets.allow.emplace(name);
  for (std::string_view name : conditional_syscalls()) sets.allow.emplace(name);
  for (const auto& [name, allowed] : policy.seccomp_changes) {
    if (allowed) {
      sets.allow.insert(name);
      sets.explicit_allow.insert(name);
      sets.deny.erase(name);
    } else {
      sets.deny.insert(name);
      sets.allow.erase(name);
      sets.explicit_allow.erase(name);
    }
  }
  return sets;
}

common::Result<std::vector<sock_filter>> build_seccomp_bpf(const Policy& policy) {
  auto ctx = build_ctx(policy);
  if (!ctx) return ctx.error();
  auto bytes = export_to_memfd(ctx->get(), false);
  if (!bytes) return bytes.error();
  if (bytes->size() % sizeof(sock_filter) != 0 || bytes->empty() || bytes->size() / sizeof(sock_filter) > BPF_MAXINSNS)
    return make_error(Errc::kInternal, "seccomp: exported program has a bad size");
  std::vector<sock_filter> prog(bytes->size() / sizeof(sock_filter));
  std::memcpy(prog.data(), bytes->data(), bytes->size());
  return prog;
}

common::Status check_syscall_names(const Policy& policy) {
  for (const auto& [name, allowed] : policy.seccomp_changes) {
    if (auto r = resolve(name, true); !r) return r.error();
  }
  return common::ok();
}

std::string seccomp_cache_key(const Policy& policy) {
  // Bump kRuleFormat whenever add_conditional() or build_ctx() change what they emit.
  constexpr int kRuleFormat = 1;
  const scmp_version* v = seccomp_version();
  std::string text = "format " + std::to_string(kRuleFormat) + " libseccomp " + std::to_string(v->major) + "." +
                     std::to_string(v->minor) + "." + std::to_string(v->micro) + "\n";
  // This very binary too: another build (another worktree, an upgrade) never reads our filters.
  struct stat exe {};
  if (::stat("/proc/self/exe", &exe) == 0)
    text += "exe " + std::to_string(exe.st_ino) + " " + std::to_string(exe.st_size) + " " +
            std::to_string(exe.st_mtim.tv_sec) + "." + std::to_string(exe.st_mtim.tv_nsec) + "\n";
  SyscallSets sets = effective_syscalls(policy);
  for (const auto* list : {&sets.allow, &sets.deny, &sets.explicit_allow}) {
    for (const auto& name : *list) text += name + ",";
    text += "\n";
  }
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

common::Result<std::vector<sock_filter>> cached_seccomp_bpf(const Policy& policy, const std::string& cache_dir) {
  const std::string path = cache_dir + "/" + seccomp_cache_key(policy) + ".bpf";
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd) {
    std::vector<sock_filter> prog(BPF_MAXINSNS + 1);
    ssize_t n = ::read(fd.get(), prog.data(), prog.size() * sizeof(sock_filter));
    if (n > 0 && n % static_cast<ssize_t>(sizeof(sock_filter)) == 0 &&
        static_cast<size_t>(n) / sizeof(sock_filter) <= BPF_MAXINSNS) {
      prog.resize(static_cast<size_t>(n) / sizeof(sock_filter));
      return prog;
    }
  }
  auto prog = build_seccomp_bpf(policy);
  if (!prog) return prog;
  if (::mkdir(cache_dir.c_str(), 0700) == 0 || errno == EEXIST) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    common::UniqueFd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    const size_t bytes = prog->size() * sizeof(sock_filter);
    if (out && ::write(out.get(), prog->data(), bytes) == static_cast<ssize_t>(bytes)) {
      out.reset();
      if (::rename(tmp.c_str(), path.c_str()) < 0) ::unlink(tmp.c_str());
    } else {
      ::unlink(tmp.c_str());
    }
    prune_cache(cache_dir, path);
  }
  return prog;
}

common::Result<std::string> build_seccomp_pfc(const Policy& policy) {
  auto ctx = build_ctx(policy);
  if (!ctx) return ctx.error();
  return export_to_memfd(ctx->get(), true);
}

}  // namespace cellgate::isolation
