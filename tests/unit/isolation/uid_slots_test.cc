// SPDX-License-Identifier: BSD-3-Clause
// uid_slots: slot arithmetic and flock-based exclusive allocation.
#include "isolation/uid_slots.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

using namespace cellgate::isolation;

TEST_CASE("slot arithmetic", "[isolation]") {
  CHECK(slot_count(200000, 6553600) == 100);
  CHECK(slot_base(200000, 0) == 200000);
  CHECK(slot_base(200000, 3) == 200000 + 3 * 65536);
}

TEST_CASE("concurrent holders get distinct slots until the range is exhausted", "[isolation]") {
  char tmpl[] = "/tmp/cellgate-uids-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = std::string(tmpl) + "/locks";
  {
    auto a = acquire_uid_slot(dir, 300000, 2 * kSlotSize, 0);
    REQUIRE(a);
    auto b = acquire_uid_slot(dir, 300000, 2 * kSlotSize, 0);
    REQUIRE(b);
    CHECK(a->index != b->index);
    CHECK(a->base != b->base);
    auto c = acquire_uid_slot(dir, 300000, 2 * kSlotSize, 1);
    REQUIRE_FALSE(c);
    CHECK(c.error().code == cellgate::common::Errc::kUnavailable);
    b->lock.reset();  // releasing a slot makes it available again
    auto d = acquire_uid_slot(dir, 300000, 2 * kSlotSize, 0);
    REQUIRE(d);
    CHECK(d->base == 300000 + (a->index == 0 ? 1 : 0) * kSlotSize);
  }
  std::filesystem::remove_all(tmpl);
}
