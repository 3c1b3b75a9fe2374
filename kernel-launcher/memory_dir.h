// SPDX-License-Identifier: BSD-3-Clause
// memory_dir: keep the kernels' dirs on a tmpfs, so that what is in them never reaches a disk.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/result.h"

namespace cellgate::launcher {

enum class MemoryDir {
  kAlready,  // on a tmpfs or ramfs already (a mount of ours from an earlier start; systemd's /run)
  kMounted,  // was on a disk and empty: a tmpfs is mounted on it now
  kInUse,    // on a disk and not empty: kernels started before may live in it, so it is left alone
};

// Makes `path` (mode `mode`) and, when it is on a disk file system and empty, mounts a tmpfs on it
// (nosuid, nodev, noexec; `size_bytes`, or the tmpfs default of half the RAM when 0; a tmpfs of ours
// from an earlier start is remounted with that size). The gateway's kernels' dirs hold each kernel's
// connection file, with the key that signs its messages, its ipc sockets, status file and stderr log;
// on a tmpfs the key is never written to a disk, and what a kernel writes into its own dir is memory
// charged to its memory cgroup (tmpfs pages are charged to the cgroup of the writer), where on a disk
// nothing bounds the number of files it makes in its dir. Its stderr log is written by its jail
// helper, outside its cgroup: that is why the helper bounds it (--kernel-log-bytes).
// It also spares the disk's inode allocator the churn of a start (on an ext4 without a journal,
// each new inode scans past every inode deleted in the last minute: ext4 ialloc.c recently_deleted).
// The mount stays when the gateway exits: kernels outlive it, as they do a /run tmpfs.
// Needs CAP_SYS_ADMIN for the mount; an error says what failed.
common::Result<MemoryDir> ensure_memory_dir(const std::string& path, mode_t mode, uint64_t size_bytes = 0);

}  // namespace cellgate::launcher
