// SPDX-License-Identifier: BSD-3-Clause
// kernel_memory_merge: --kernel-memory-merge on starts the host's KSM daemon at a bounded scan rate.
#pragma once

#include <cstdint>
#include <string>

namespace cellgate::gateway {

// Where Linux keeps KSM's settings (Documentation/admin-guide/mm/ksm.rst, "KSM daemon sysfs interface").
inline constexpr const char* kKsmDir = "/sys/kernel/mm/ksm";

// Called only when --kernel-memory-merge is on: with it off the gateway reads and writes nothing here,
// since these are host-wide settings that other software may own. Sets ksmd to scan at most
// `pages_per_second` (sleep_millisecs 20, pages_to_scan = a 50th of it; the scan-time advisor off),
// then run = 1: ksmd's CPU is the host's, charged to no kernel, so it gets a fixed bound. Throws
// ConfigError with one line when the kernel has no KSM (no `ksm_dir`/run: CONFIG_KSM off) or a
// setting cannot be written (not root). Returns a line saying what it found and set, for the log. The
// settings stay after the gateway exits (like a sysctl): kernels outlive the gateway and keep being
// merged. runs in: the starting thread, before any kernel.
std::string start_kernel_memory_merge(const std::string& ksm_dir, uint64_t pages_per_second);

}  // namespace cellgate::gateway
