// SPDX-License-Identifier: BSD-3-Clause
// uid_slots: one 65536-uid host range per live jail, claimed with flock(2).
#include "isolation/uid_slots.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cstring>

namespace cellgate::isolation {

using common::Errc;
using common::make_error;

uint64_t slot_count(uint64_t start, uint64_t count) {
  (void)start;
  return count / kSlotSize;
}

uint64_t slot_base(uint64_t start, uint64_t index) { return start + index * kSlotSize; }

common::Result<UidSlot> acquire_uid_slot(const std::string& lock_dir, uint64_t start, uint64_t count,
                                         uint64_t first) {
  uint64_t n = slot_count(start, count);
  if (n == 0) return make_error(Errc::kBadRequest, "uid range holds no 65536-uid slot");
  if (::mkdir(lock_dir.c_str(), 0700) < 0 && errno != EEXIST)
    return make_error(Errc::kInternal, "mkdir " + lock_dir + ": " + std::strerror(errno), errno);
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t index = (first + k) % n;
    std::string path = lock_dir + "/" + std::to_string(index) + ".lock";
    common::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return make_error(Errc::kInternal, "open " + path + ": " + std::strerror(errno), errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      UidSlot slot;
      slot.index = index;
      slot.base = slot_base(start, index);
      slot.lock = std::move(fd);
      return slot;
    }
    if (errno != EWOULDBLOCK) return make_error(Errc::kInternal, "flock " + path + ": " + std::strerror(errno), errno);
  }
  return make_error(Errc::kUnavailable, "all " + std::to_string(n) + " uid slots are in use", EAGAIN);
}

}  // namespace cellgate::isolation
