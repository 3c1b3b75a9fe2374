// SPDX-License-Identifier: BSD-3-Clause
// uid_slots: one 65536-uid host range per live jail, claimed with flock(2).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::isolation {

constexpr uint64_t kSlotSize = 65536;

struct UidSlot {
  uint64_t index = 0;
  uint64_t base = 0;        // host uid of inside uid 0; inside uid n is base + n
  common::UniqueFd lock;    // the flock'ed lock file; the slot is ours while it is open
};

// Number of whole slots in [start, start + count).
uint64_t slot_count(uint64_t start, uint64_t count);
uint64_t slot_base(uint64_t start, uint64_t index);
// Claims a free slot: flock(LOCK_EX|LOCK_NB) on <lock_dir>/<index>.lock, starting the search at
// `first` (mod the slot count) to spread concurrent helpers. Creates lock_dir (0700) if needed.
// Errors: kUnavailable when every slot is held.
common::Result<UidSlot> acquire_uid_slot(const std::string& lock_dir, uint64_t start, uint64_t count,
                                         uint64_t first);

}  // namespace cellgate::isolation
