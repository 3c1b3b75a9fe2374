// SPDX-License-Identifier: BSD-3-Clause
// host_dirs: opening and handing over the host dirs a jail binds read-write (workspace, ipc dir).
#pragma once

#include <sys/types.h>

#include <initializer_list>
#include <string>

#include "common/unique_fd.h"

namespace cellgate::isolation {

// Opens a read-write bind source without following a symlink in any component: a kernel can plant
// `link -> /` in its own workspace, and a path through it must not make us chown or bind the target
// (bug 5). openat2(2) RESOLVE_NO_SYMLINKS; kernels before 5.6 get an O_NOFOLLOW component walk.
// Invalid fd with errno ELOOP when a component is a symlink.
common::UniqueFd open_dir_no_symlinks(const std::string& path);

// A root-owned dir is handed to uid 1000 only if it looks freshly made for this jail: not shared
// (world-writable, a /tmp look-alike) and, for a workspace (!entries), still empty (bug 8). The sticky
// bit alone is no sign of sharing: Jupyter leaves its private runtime dirs 0700 with it (drwx-----T).
bool may_hand_over(int dir_fd, bool entries);

// Chowns `dir` (and, with entries, the regular files directly in it) from one of `from` to owner.
void chown_tree_top(int dir_fd, bool entries, std::initializer_list<uid_t> from, uid_t owner);

}  // namespace cellgate::isolation
