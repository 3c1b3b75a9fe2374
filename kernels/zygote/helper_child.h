// SPDX-License-Identifier: BSD-3-Clause
// helper_child: what the zygote's forked child does — become an ordinary cellgate-jail helper.
#pragma once

#include <cstddef>
#include <string_view>

namespace cellgate::zygote {

// The zygote's argv strings, reused for the helper's and the kernel's /proc/PID/cmdline (changing
// arg_start with prctl(PR_SET_MM) needs CAP_SYS_RESOURCE, which containers often lack). main() makes
// sure the area is at least kTitleBytes long (it re-executes itself with padding otherwise).
inline constexpr size_t kTitleBytes = 512;
void set_title_area(char* start, size_t len);
// runs in: the kernel process, at entry. The jail's init overwrote the title it inherited
// ("cellgate-init"); the kernel shows its own command again, as after an execve. No allocation.
void show_kernel_title() noexcept;

// runs in: the freshly forked child of the (single-threaded) zygote. Puts stdin, the log (stdout and
// stderr) and the ready pipe on fds 0, 1+2 and 3, closes everything else, resets signals, decodes and
// checks the request (only an ipykernel jail with --ready-fd 3: else a failed ready line, exit 125),
// renames the process (/proc/PID/cmdline reads as cellgate-jail's, which the gateway checks when it
// re-adopts), then runs isolation::jail_main with the fork-server hooks and _exits with its code.
// Never runs Python itself.
[[noreturn]] void run_helper(std::string_view request, const int fds[3]);

}  // namespace cellgate::zygote
