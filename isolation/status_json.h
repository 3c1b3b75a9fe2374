// SPDX-License-Identifier: BSD-3-Clause
// status_json: the status file and ready-fd JSON documents (a tiny writer, no JSON library).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace cellgate::isolation {

// Escapes a string for a JSON string literal (quotes included).
std::string json_string(const std::string& s);

// egress_fd: the fd number the jail's init keeps its egress listener at (-1: none; not written).
std::string running_json(pid_t helper_pid, pid_t init_pid, pid_t kernel_pid, uint64_t host_uid,
                         const std::string& cgroup, int egress_fd = -1);
std::string failed_json(const std::string& stage, int err, const std::string& message);
std::string exited_json(std::optional<int> exit_code, std::optional<int> signal, const std::string& reason);

// Replaces `path` atomically (write to path.tmp.<pid>, fsync-free rename). False on error.
bool write_status_file(const std::string& path, const std::string& json);
// Writes `json` plus a newline to fd and closes it (best effort; the reader may be gone).
void write_ready_line(int fd, const std::string& json);

}  // namespace cellgate::isolation
