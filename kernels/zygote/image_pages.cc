// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/zygote/image_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1 (uapi asm-generic/mman-common.h); glibc 2.36's headers lack it
#endif

namespace cellgate::zygote {
namespace {

std::uintptr_t align_up(std::uintptr_t v, std::size_t to) { return (v + to - 1) & ~(std::uintptr_t{to} - 1); }
std::uintptr_t align_down(std::uintptr_t v, std::size_t to) { return v & ~(std::uintptr_t{to} - 1); }

void* plain_mmap(std::size_t size) {
  // What CPython's _PyObject_ArenaMmap does.
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

ArenaRegion::ArenaRegion() {
  const std::size_t want = kMaxArenas * kArenaSize;
  // One huge page more than needed, then trim both ends to a 2 MiB-aligned start.
  void* p = ::mmap(nullptr, want + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  char* raw = static_cast<char*>(p);
  char* start = reinterpret_cast<char*>(align_up(reinterpret_cast<std::uintptr_t>(raw), kHugePage));
  if (start > raw) ::munmap(raw, static_cast<std::size_t>(start - raw));
  char* end = raw + want + kHugePage;
  if (end > start + want) ::munmap(start + want, static_cast<std::size_t>(end - (start + want)));
  base_ = start;
  mapped_ = want;
}

void* ArenaRegion::allocate(std::size_t size) noexcept {
  if (size == kArenaSize && base_ != nullptr) {
    if (free_count_ > 0) return free_[--free_count_];
    if (!sealed_ && carved_ + size <= mapped_) {
      void* p = base_ + carved_;
      carved_ += size;
      return p;
    }
  }
  return plain_mmap(size);
}

void ArenaRegion::release(void* p, std::size_t size) noexcept {
  if (!contains(p)) {
    ::munmap(p, size);
    return;
  }
  // The slot stays mapped (no hole splits the region's mapping) and holds no memory; a kernel that
  // releases a preloaded arena gives back its own copy of it, or splits only its own 2 MiB mapping.
  ::madvise(p, size, MADV_DONTNEED);
  if (free_count_ < kMaxArenas) free_[free_count_++] = p;  // always true: at most kMaxArenas slots exist
}

void ArenaRegion::seal() noexcept {
  if (base_ == nullptr || sealed_) return;
  sealed_ = true;
  // The rest of the 2 MiB page the last arena is in stays, so the whole page can be collapsed.
  const std::size_t keep = align_up(carved_, kHugePage);
  if (keep < mapped_) {
    ::munmap(base_ + keep, mapped_ - keep);
    mapped_ = keep;
  }
}

bool ArenaRegion::contains(const void* p) const noexcept {
  const char* c = static_cast<const char*>(p);
  return base_ != nullptr && c >= base_ && c < base_ + carved_;
}

CollapseResult collapse_anonymous_memory(const void* busy) {
  CollapseResult result;
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) {
    result.error = errno;
    return result;
  }
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long start = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = {};
    char dev[16] = {};
    if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu", &start, &end, perms, &offset, dev, &inode) != 6) continue;
    // Private, writable, not file-backed. The stack changes with every call: left alone.
    if (inode != 0 || std::strcmp(perms, "rw-p") != 0 || std::strstr(line, "[stack]") != nullptr) continue;
    const std::uintptr_t lo = align_up(start, ArenaRegion::kHugePage);
    std::uintptr_t hi = align_down(end, ArenaRegion::kHugePage);
    const auto busy_at = reinterpret_cast<std::uintptr_t>(busy);
    if (busy != nullptr && start <= busy_at && busy_at < end) hi = align_down(busy_at, ArenaRegion::kHugePage);
    if (hi <= lo) continue;
    // madvise(2): MADV_COLLAPSE works on whole 2 MiB ranges and fails the call if any could not be
    // collapsed; one at a time, so that one busy range does not cost the others.
    for (std::uintptr_t at = lo; at < hi; at += ArenaRegion::kHugePage) {
      if (::madvise(reinterpret_cast<void*>(at), ArenaRegion::kHugePage, MADV_COLLAPSE) == 0) {
        result.bytes += ArenaRegion::kHugePage;
        ++result.ranges;
      } else if (result.error == 0) {
        result.error = errno;
        if (errno == EINVAL) break;  // not supported here: every range would say the same
      }
    }
    if (result.error == EINVAL) break;
  }
  std::fclose(maps);
  return result;
}

}  // namespace cellgate::zygote
