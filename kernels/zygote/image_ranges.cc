// SPDX-License-Identifier: BSD-3-Clause
// image_ranges: which mappings are the preloaded image, so that a jail's helper and init can drop them.
#include "kernels/zygote/image_ranges.h"

#include <cstdio>
#include <cstring>

namespace cellgate::zygote {
namespace {

using isolation::child::MemRange;

// Static storage: filled once at boot, read (never written) by every fork after.
constexpr size_t kMaxStartup = 256;
constexpr size_t kMaxImage = 4096;
MemRange g_startup[kMaxStartup];
size_t g_n_startup = 0;
MemRange g_image[kMaxImage];
size_t g_n_image = 0;
size_t g_image_bytes = 0;
size_t g_image_mappings = 0;

struct Mapping {
  unsigned long start = 0, end = 0;
  char name[256] = {};
};

// Calls fn(mapping) for each line of /proc/self/maps; false when it cannot be read or fn says stop.
template <typename Fn>
bool each_mapping(Fn fn) {
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return false;
  char line[512];
  bool ok = true;
  while (ok && std::fgets(line, sizeof line, maps) != nullptr) {
    Mapping m;
    unsigned long offset = 0, inode = 0;
    char perms[8] = {}, dev[16] = {};
    int name_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &m.start, &m.end, perms, &offset, dev, &inode, &name_at) < 6)
      continue;
    if (name_at > 0) {
      std::snprintf(m.name, sizeof m.name, "%s", line + name_at);
      m.name[std::strcspn(m.name, "\n")] = '\0';
    }
    ok = fn(m);
  }
  std::fclose(maps);
  return ok;
}

bool overlaps_startup(const Mapping& m) {
  for (size_t i = 0; i < g_n_startup; ++i) {
    if (m.start < g_startup[i].start + g_startup[i].len && g_startup[i].start < m.end) return true;
  }
  return false;
}

// What may be dropped: anonymous memory (the arenas, Python's and its libraries' allocations) and
// the shared objects the preload opened. Any other file stays mapped: libc keeps data of its own in
// files it maps later (the locale Python selected: ctype tables that strtoul reads in the helper).
// The kernel's special mappings ([heap], [stack], [vdso]...) are never dropped.
bool droppable(const Mapping& m) {
  if (m.name[0] == '\0') return true;
  if (m.name[0] != '/') return false;
  const char* base = std::strrchr(m.name, '/') + 1;
  return std::strstr(base, ".so") != nullptr;
}

}  // namespace

void record_startup_mappings() {
  g_n_startup = 0;
  each_mapping([](const Mapping& m) {
    if (g_n_startup == kMaxStartup) return false;
    g_startup[g_n_startup++] = MemRange{m.start, m.end - m.start};
    return true;
  });
}

const char* record_image_ranges() {
  g_n_image = g_image_bytes = g_image_mappings = 0;
  if (g_n_startup == 0 || g_n_startup == kMaxStartup) return "the startup mappings were not recorded";
  bool fits = true;
  bool read = each_mapping([&](const Mapping& m) {
    if (!droppable(m) || overlaps_startup(m)) return true;
    ++g_image_mappings;
    g_image_bytes += m.end - m.start;
    if (g_n_image > 0 && g_image[g_n_image - 1].start + g_image[g_n_image - 1].len == m.start) {
      g_image[g_n_image - 1].len += m.end - m.start;
      return true;
    }
    if (g_n_image == kMaxImage) {
      fits = false;
      return false;
    }
    g_image[g_n_image++] = MemRange{m.start, m.end - m.start};
    return true;
  });
  if (!read || !fits) {
    g_n_image = g_image_bytes = g_image_mappings = 0;
    return fits ? "cannot read /proc/self/maps" : "more image mappings than the table holds";
  }
  return "";
}

const isolation::child::MemRange* image_ranges(size_t* count) {
  *count = g_n_image;
  return g_n_image > 0 ? g_image : nullptr;
}

size_t image_range_bytes() { return g_image_bytes; }
size_t image_range_mappings() { return g_image_mappings; }

}  // namespace cellgate::zygote
