// SPDX-License-Identifier: BSD-3-Clause
// child_steps: the apply_* steps run_child sequences. All async-signal-safe, return 0 or an errno.
#pragma once

#include "isolation/child/run_child.h"

namespace cellgate::isolation::child {

// Sends one record on the report socket; ignores failures (the helper may be gone).
void report(int fd, ReportKind kind, Stage stage, int err, uint32_t detail) noexcept;
// Reports the failure and _exits(127).
[[noreturn]] void fail(const ChildPlan& plan, Stage stage, int err, uint32_t detail = 0) noexcept;

// Runs the mount ops in order; on failure returns the errno and stores the op index.
int apply_mounts(const MountOp* ops, size_t n, uint32_t* failed_index) noexcept;
// pivot_root(".", ".") into new_root, detaches the old root, remounts "/" read-only.
int apply_pivot_root(const char* new_root) noexcept;
int apply_remount_root_ro() noexcept;
// Brings `lo` up (a fresh net namespace has it DOWN, so even 127.0.0.1 gives ENETUNREACH).
int apply_loopback_up() noexcept;
int apply_rlimits(const Rlimit* limits, size_t n) noexcept;
// The egress proxy's endpoint: a listening socket on 127.0.0.1:plan.egress_port (the only way out
// of the jail's network namespace) at fd plan.egress_keep_fd, sent with a pidfd of the caller over
// plan.egress_fd, which is then closed. *listen_fd is that fd (init keeps it).
int apply_egress_listener(const ChildPlan& plan, int* listen_fd) noexcept;
// munmap(2) of each range; a range that is already gone is no error (nothing to report either).
void apply_unmap(const MemRange* ranges, size_t n) noexcept;

// Drops every capability (bounding, inheritable, ambient) and switches to uid/gid; returns the
// failing stage through *stage.
int apply_drop_privileges(const ChildPlan& plan, Stage* stage) noexcept;
// PR_SET_NO_NEW_PRIVS then seccomp(SECCOMP_SET_MODE_FILTER) with the parent's BPF.
int apply_seccomp(const ChildPlan& plan, Stage* stage) noexcept;
// Closes every fd >= 3 except those listed (close_range over the gaps).
int apply_close_fds_except(const int* keep, size_t n) noexcept;

// One byte from the helper on sync_fd; false when it gave up on us (EOF) instead.
bool wait_for_helper(int sync_fd) noexcept;
// False once the helper's end of the sync pipe is closed (POLLHUP): it died.
bool helper_alive(int sync_fd) noexcept;
// Default dispositions for every signal and an empty mask (what a fresh command expects).
int reset_signals() noexcept;

// execve over plan.exec_paths (the PATH search done in the parent); reports kExec on failure.
[[noreturn]] void exec_command(const ChildPlan& plan) noexcept;

// pid 1 after setup: reaps, forwards signals to the kernel's process group, exits with the
// kernel's status (after writing its raw wait status to exit_fd).
[[noreturn]] void run_init_loop(const ChildPlan& plan, pid_t kernel) noexcept;
// The set of signals init forwards (and blocks); SIGCHLD is added by the callers that need it.
void forwarded_signals(sigset_t* set) noexcept;

}  // namespace cellgate::isolation::child
