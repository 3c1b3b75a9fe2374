// SPDX-License-Identifier: BSD-3-Clause
#include "kernels/zygote/image_pages.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using cellgate::zygote::ArenaRegion;

namespace {

constexpr std::size_t kArena = ArenaRegion::kArenaSize;
constexpr std::size_t kHuge = ArenaRegion::kHugePage;
constexpr int kMadvCollapse = 25;  // uapi asm-generic/mman-common.h (Linux 6.1); glibc 2.36 lacks it
constexpr int kSkipReturnCode = 4;  // SKIP_RETURN_CODE in CMakeLists.txt

bool mapped(const void* p) {
  unsigned char v = 0;
  // mincore(2): ENOMEM when the page is not mapped.
  return ::mincore(const_cast<void*>(p), 4096, &v) == 0;
}

bool resident(const void* p) {
  unsigned char v = 0;
  return ::mincore(const_cast<void*>(p), 4096, &v) == 0 && (v & 1) != 0;
}

// AnonHugePages of the mapping that holds `p`, from /proc/self/smaps (KiB).
long anon_huge_kib(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  while (std::getline(smaps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(' ') != std::string::npos && (head >> std::hex >> lo >> dash >> hi) && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

// The collapse cases need transparent huge pages and MADV_COLLAPSE (Linux 6.1). Where the host lacks
// either, the case ends with ctest's skip code and the reason (Catch2 2.13 has no SKIP(); each case is
// its own ctest test, see CMakeLists.txt), rather than passing with nothing checked.
void require_collapse() {
  const char* why = nullptr;
  if (::access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
    why = "this kernel has no transparent huge pages";
  } else {
    // One 2 MiB-aligned page, touched once: madvise(2) says EINVAL when MADV_COLLAPSE is unknown.
    void* raw = ::mmap(nullptr, 2 * kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return;
    auto* page = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(raw) + kHuge - 1) & ~(kHuge - 1));
    page[0] = 1;
    if (::madvise(page, kHuge, kMadvCollapse) != 0 && errno == EINVAL) why = "this kernel has no MADV_COLLAPSE (Linux < 6.1)";
    ::munmap(raw, 2 * kHuge);
  }
  if (why == nullptr) return;
  std::printf("SKIP: %s\n", why);
  std::fflush(stdout);
  std::_Exit(kSkipReturnCode);
}

}  // namespace

TEST_CASE("arenas are carved in order from a 2 MiB-aligned region, then reused, then mmapped after seal", "[image_pages]") {
  ArenaRegion region;
  REQUIRE(region.base() != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(region.base()) % kHuge == 0);

  std::vector<char*> arenas;
  for (int i = 0; i < 5; ++i) arenas.push_back(static_cast<char*>(region.allocate(kArena)));
  for (int i = 0; i < 5; ++i) {
    CHECK(arenas[i] == region.base() + i * kArena);
    CHECK(region.contains(arenas[i]));
  }
  CHECK(region.carved() == 5 * kArena);

  // A released arena holds no memory and is the next one handed out.
  std::memset(arenas[2], 0x5a, kArena);
  region.release(arenas[2], kArena);
  CHECK(region.free_slots() == 1);
  CHECK_FALSE(resident(arenas[2]));
  char* again = static_cast<char*>(region.allocate(kArena));
  CHECK(again == arenas[2]);
  CHECK(again[0] == 0);
  CHECK(again[kArena - 1] == 0);

  // Other sizes are not arenas: plain mappings, unmapped on release.
  void* odd = region.allocate(3 * 4096);
  REQUIRE(odd != nullptr);
  CHECK_FALSE(region.contains(odd));
  region.release(odd, 3 * 4096);
  CHECK_FALSE(mapped(odd));

  region.seal();
  // The 2 MiB page of the last arena stays mapped; the rest of the reservation is gone.
  CHECK(mapped(region.base() + 5 * kArena));
  CHECK_FALSE(mapped(region.base() + 6 * kArena));
  CHECK_FALSE(mapped(region.base() + 200 * kArena));

  char* after = static_cast<char*>(region.allocate(kArena));
  REQUIRE(after != nullptr);
  CHECK_FALSE(region.contains(after));
  after[0] = 1;
  region.release(after, kArena);
  CHECK_FALSE(mapped(after));

  // Region slots released after the seal are still reused.
  region.release(arenas[4], kArena);
  CHECK(region.allocate(kArena) == arenas[4]);
  CHECK(region.carved() == 5 * kArena);
}

TEST_CASE("the region's reservation is never carved past its end", "[image_pages]") {
  ArenaRegion region;
  REQUIRE(region.base() != nullptr);
  for (std::size_t i = 0; i < ArenaRegion::kMaxArenas; ++i) REQUIRE(region.allocate(kArena) == region.base() + i * kArena);
  void* beyond = region.allocate(kArena);
  REQUIRE(beyond != nullptr);
  CHECK_FALSE(region.contains(beyond));
  region.release(beyond, kArena);
  for (std::size_t i = 0; i < ArenaRegion::kMaxArenas; ++i) region.release(const_cast<char*>(region.base()) + i * kArena, kArena);
  CHECK(region.free_slots() == ArenaRegion::kMaxArenas);
}

TEST_CASE("private anonymous memory is collapsed into huge pages, and a fork's write splits only its own copy", "[image_pages]") {
  require_collapse();
  ArenaRegion region;
  REQUIRE(region.base() != nullptr);
  std::vector<char*> arenas;
  for (int i = 0; i < 4; ++i) {
    arenas.push_back(static_cast<char*>(region.allocate(kArena)));
    std::memset(arenas.back(), 0x11 * (i + 1), kArena);
  }
  region.seal();
  CHECK(anon_huge_kib(region.base()) == 0);

  cellgate::zygote::CollapseResult r = cellgate::zygote::collapse_anonymous_memory();
  INFO("error " << r.error << " " << std::strerror(r.error));
  CHECK(r.bytes >= 2 * kHuge);
  CHECK(anon_huge_kib(region.base()) == 4096);
  for (int i = 0; i < 4; ++i) CHECK(arenas[i][12345] == static_cast<char>(0x11 * (i + 1)));

  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    arenas[1][4096] = 0x7f;  // copy-on-write inside a shared huge page
    long in_child = anon_huge_kib(region.base());
    bool kept = arenas[1][4097] == 0x22 && arenas[1][4096] == 0x7f;
    char report[2] = {static_cast<char>(in_child == 2048 ? 'y' : 'n'), static_cast<char>(kept ? 'y' : 'n')};
    (void)!::write(pipefd[1], report, 2);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char report[2] = {};
  REQUIRE(::read(pipefd[0], report, 2) == 2);
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(report[0] == 'y');  // the child split the 2 MiB page it wrote into, and kept the other
  CHECK(report[1] == 'y');
  CHECK(arenas[1][4096] == 0x22);                // the parent's memory is untouched
  CHECK(anon_huge_kib(region.base()) == 4096);  // and still in huge pages
}

TEST_CASE("the 2 MiB ranges from the busy address to the end of its mapping stay in 4 KiB pages", "[image_pages]") {
  require_collapse();
  ArenaRegion region;
  REQUIRE(region.base() != nullptr);
  for (int i = 0; i < 6; ++i) std::memset(region.allocate(kArena), 0x33, kArena);
  region.seal();
  const char* busy = region.base() + kHuge + 4096;
  cellgate::zygote::collapse_anonymous_memory(busy);
  CHECK(anon_huge_kib(region.base()) == 2048);  // only the range below the busy one
}
