// SPDX-License-Identifier: BSD-3-Clause
// run_child: the jail's child world (after clone, before execve); the contract with the parent.
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace cellgate::isolation::child {

// Where a failure happened; the parent turns it into `cellgate-jail: <stage>: <strerror>`.
// Append only: the numbers cross the report socket.
enum class Stage : uint32_t {
  kNone = 0, kSync, kPdeathsig, kCgroupNs, kMountPrivate, kMount, kPivotRoot, kRemountRoot,
  kHostname, kLoopback, kRlimits, kFork, kSetsid, kSignals, kCapabilities, kSetgroups, kSetgid,
  kSetuid, kNoNewPrivs, kSeccomp, kFds, kChdir, kExec, kInit, kSetns, kEgress, kMemoryMerge,
};
// Records on the report socket (SOCK_SEQPACKET, so one record per message).
enum class ReportKind : uint32_t { kError = 1, kHello = 2 };
struct ChildReport {
  uint32_t kind;    // ReportKind
  uint32_t stage;   // Stage
  int32_t err;      // errno
  uint32_t detail;  // mount op index for Stage::kMount, else 0
};
static_assert(sizeof(ChildReport) == 16);

enum class MountOpType : uint32_t {
  kMkdir,       // mkdir target (mode), chown owner; EEXIST is fine
  kTouch,       // create an empty file (a file bind's mount point)
  kTmpfs,       // mount tmpfs at target with flags and data
  kBind,        // bind source (recursively) onto target, then mount_setattr(attr_set)
  kProc,        // mount proc of the jail's pid namespace
  kDevpts,      // mount a new devpts instance (data = options)
  kSymlink,     // symlink(source, target)
  kWriteFile,   // create target with data (data_len bytes), chown owner
  kWriteExisting,  // open existing target O_WRONLY and write data (sysctls)
  kMoveTree,    // move_mount the detached tree fd onto target (idmapped binds)
  kSetAttr,     // mount_setattr(target, attr_set), recursive or not
};
struct MountOp {
  MountOpType type;
  const char* source;   // kBind, kSymlink
  const char* target;   // absolute path below the new root (before pivot_root)
  const char* data;     // fs options or file contents
  size_t data_len;
  unsigned long flags;  // MS_* for kTmpfs/kProc/kDevpts
  uint64_t attr_set;    // MOUNT_ATTR_* for kBind/kMoveTree/kSetAttr
  uint32_t mode;
  int32_t owner;        // uid=gid to chown to (inside ids), -1 = leave
  int fd;               // kMoveTree
  bool recursive;       // kBind, kSetAttr
  bool optional;        // ENOENT on the source/target is not an error
};

struct Rlimit {
  int resource;
  rlimit value;
};

// A range of the helper's address space (whole mappings), see ChildPlan::shed.
struct MemRange {
  uintptr_t start;
  size_t len;
};

// Everything the child needs, fully materialised by the parent before clone. Holds only
// pointers into storage owned by the parent's JailPlan; the child never allocates.
struct ChildPlan {
  const MountOp* mounts;
  size_t n_mounts;
  const char* new_root;         // tmpfs root, pivot_root'ed into
  const char* hostname;
  size_t hostname_len;
  const Rlimit* rlimits;
  size_t n_rlimits;
  const sock_filter* filter;    // seccomp BPF built with libseccomp in the parent
  unsigned short filter_len;
  const char* const* exec_paths;  // candidate absolute paths for argv[0] (PATH search done)
  char* const* argv;
  char* const* envp;
  const char* cwd;
  uid_t uid;                    // inside uid/gid after setup (1000)
  gid_t gid;
  mode_t umask;
  int last_cap;                 // /proc/sys/kernel/cap_last_cap
  int sync_fd;                  // read end: byte 1 = maps written, byte 2 = in our cgroups;
                                // EOF (POLLHUP) = the helper died
  int report_fd;                // SOCK_SEQPACKET, close-on-exec: ChildReport records
  int exit_fd;                  // write end: init writes the kernel's wait status (int)
  char* title_area;             // the helper's argv strings, which init inherits and overwrites:
  size_t title_len;             // /proc/1/cmdline is readable by all in the jail (host paths, names)
  // The egress proxy (egress/): when egress_fd >= 0, init listens on 127.0.0.1:egress_port in the
  // jail's network namespace and sends that socket and a pidfd of itself over egress_fd (a control
  // connection the helper opened and announced), then keeps the listener open for the jail's life.
  int egress_fd;
  unsigned short egress_port;
  int egress_keep_fd;           // the listener's fd number in init (the helper names it in the status
                                // file, so that `--egress-attach` can hand it to a restarted proxy)
  // The fork server (kernels/zygote): when set, the kernel process calls this instead of execve and
  // continues in the image it was forked from. Called after the whole lockdown, the hello report and
  // with the report fd closed (as execve would have closed it); must not return.
  void (*enter)(const ChildPlan& plan) noexcept;
  // The fork server: memory init unmaps once it has forked the kernel (the preloaded Python image,
  // which init never touches; kept, its page tables and mappings would cost every jail ~0.5 MiB of
  // host memory that no smaps shows). nullptr = none.
  const MemRange* shed;
  size_t n_shed;
  // The kernel's memory may be merged with identical pages of other processes (KSM): the kernel
  // process sets PR_SET_MEMORY_MERGE before it execs or enters (the operator's choice, off by default:
  // a merged page is a side channel between tenants; README "Kernel memory merging").
  bool memory_merge;
};

// runs in: child (pid 1 of the new namespaces), async-signal-safe. Never returns: builds the root,
// locks itself down, forks the kernel (pid 2, which execs argv), then serves as the jail init and
// _exits with the kernel's status; on a failure it reports {stage, errno} and _exits(127).
[[noreturn]] void run_child(const ChildPlan& plan) noexcept;

}  // namespace cellgate::isolation::child
