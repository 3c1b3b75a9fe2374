// SPDX-License-Identifier: BSD-3-Clause
// image_pages: the fork server's preloaded image in 2 MiB pages, so that each of a kernel's three forks
// (zygote -> helper -> init -> kernel) copies ~50 page-middle entries instead of ~25,000 page-table
// entries, and each exit tears down as few.
#pragma once

#include <cstddef>

namespace cellgate::zygote {

// Where pymalloc's 1 MiB arenas come from. CPython mmaps each arena on its own, and the shared
// libraries the preload opens land between them, so most of the ~60 MiB of preloaded objects sat in
// short mappings that no 2 MiB page fits into. While the image is preloaded, arenas are carved in
// order from one 2 MiB-aligned reservation; seal() ends that (the untouched tail is unmapped) and
// later arenas, a kernel's own, are plain mmaps as CPython's default allocator makes them.
// A released region arena is emptied (MADV_DONTNEED) and reused first, before and after seal().
// Called by pymalloc under the GIL: allocates nothing, takes no lock.
class ArenaRegion {
 public:
  static constexpr std::size_t kArenaSize = std::size_t{1} << 20;  // obmalloc.c ARENA_SIZE (3.10+)
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  static constexpr std::size_t kMaxArenas = 256;

  // Reserves kMaxArenas arenas of address space (MAP_NORESERVE: nothing is committed until touched).
  // Without the reservation every arena is a plain mmap.
  ArenaRegion();
  ArenaRegion(const ArenaRegion&) = delete;
  ArenaRegion& operator=(const ArenaRegion&) = delete;

  void* allocate(std::size_t size) noexcept;  // nullptr when out of memory, as pymalloc expects
  void release(void* p, std::size_t size) noexcept;
  void seal() noexcept;

  bool contains(const void* p) const noexcept;
  const char* base() const noexcept { return base_; }
  std::size_t carved() const noexcept { return carved_; }  // bytes handed out in order so far
  std::size_t free_slots() const noexcept { return free_count_; }

 private:
  char* base_ = nullptr;
  std::size_t mapped_ = 0;  // bytes of the reservation still mapped
  std::size_t carved_ = 0;
  bool sealed_ = false;
  void* free_[kMaxArenas] = {};
  std::size_t free_count_ = 0;
};

// Backs the 2 MiB-aligned stretches of this process's private anonymous writable memory (heap, arenas,
// anonymous mappings; not the stack) with huge pages, by MADV_COLLAPSE (Linux 6.1), whatever the
// system's THP mode: the mappings are not marked MADV_HUGEPAGE, so a kernel's own later faults stay
// 4 KiB. A forked kernel's first write into a shared 2 MiB page splits only its own mapping of it
// and copies 4 KiB, as before; but the fork server's own writes would split its mapping for good, so
// the 2 MiB ranges from `busy` to the end of its mapping (the top of the malloc heap, where the
// server's allocations go) stay as they are. `error` is the first madvise errno (EINVAL: no THP here).
struct CollapseResult {
  std::size_t bytes = 0;
  std::size_t ranges = 0;
  int error = 0;
};
CollapseResult collapse_anonymous_memory(const void* busy = nullptr);

}  // namespace cellgate::zygote
