// SPDX-License-Identifier: BSD-3-Clause
// syscall_lists: the base allowlist, modelled on moby's profiles/seccomp/default.json.
#pragma once

#include <span>
#include <string_view>

namespace cellgate::isolation {

// Unconditionally allowed by the "docker-default" base (before the policy's denies).
std::span<const char* const> docker_default_syscalls();
// Allowed by the base only with argument conditions: clone, clone3 (ENOSYS), ioctl, personality, socket.
std::span<const char* const> conditional_syscalls();
bool is_conditional_syscall(std::string_view name);

}  // namespace cellgate::isolation
