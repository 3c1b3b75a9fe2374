// SPDX-License-Identifier: BSD-3-Clause
// runtime_dirs: the per-kernel dirs under --runtime-dir, on tmpfs when --ipc-tmpfs says so.
#pragma once

#include <sys/types.h>

#include <string>

#include "gateway/config.h"

namespace cellgate::gateway {

// Makes <runtime_dir>/k (0711: k/<id> is handed to its kernel: connection file, ipc sockets) and
// <runtime_dir>/s (0700: s/<id>, the jail's status file and the kernel's log, never is). With
// --ipc-tmpfs on, or auto for the default runtime dir as root, a tmpfs is first mounted on each
// (launcher::ensure_memory_dir) unless it is in memory already or holds kernels' dirs. Throws
// ConfigError (one line) when `on` cannot be honoured; under auto it logs why and goes on.
void prepare_runtime_dirs(const Config& config);

// Makes path and its parents, then sets its mode (best effort: a failure shows when the dir is used).
void make_dirs(const std::string& path, mode_t mode);

}  // namespace cellgate::gateway
