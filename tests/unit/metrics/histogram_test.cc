// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>
#include <vector>

#include "metrics/counters.h"
#include "metrics/labels.h"
#include "metrics/latency_histogram.h"

using namespace cellgate::metrics;

TEST_CASE("a histogram counts each duration in the first bucket whose bound holds it", "[metrics]") {
  LatencyHistogram h{0.01, 0.1, 1};
  h.observe(0.005);
  h.observe(0.01);  // le: equal to a bound counts in that bucket
  h.observe(0.5);
  h.observe(7);     // +Inf only
  h.observe(-1);    // a clock step back counts as 0
  h.observe(std::nan(""));
  auto s = h.snapshot();
  REQUIRE(s.bounds == std::vector<double>{0.01, 0.1, 1});
  CHECK(s.cumulative == std::vector<uint64_t>{4, 4, 5, 6});
  CHECK(s.count == 6);
  CHECK(s.sum_seconds == Approx(7.515).epsilon(1e-9));
}

TEST_CASE("hooks from several threads lose no count", "[metrics]") {
  LatencyHistogram h = duration_histogram();
  Counter c;
  Level l;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        h.observe(0.002);
        c.add(3);
        l.up();
        l.down();
      }
    });
  for (auto& t : threads) t.join();
  CHECK(h.snapshot().count == 40000);
  CHECK(h.snapshot().cumulative.back() == 40000);
  CHECK(c.value() == 120000);
  CHECK(l.value() == 0);
}

TEST_CASE("jail stage words map onto the bounded set", "[metrics]") {
  CHECK(jail_stage_from_name("pivot_root") == JailStage::kPivotRoot);
  CHECK(jail_stage_from_name("uid_map") == JailStage::kIdMap);
  CHECK(jail_stage_from_name("gid_map") == JailStage::kIdMap);
  CHECK(jail_stage_from_name("setuid") == JailStage::kCredentials);
  CHECK(jail_stage_from_name("cgroup") == JailStage::kCgroup);
  CHECK(jail_stage_from_name("close_fds") == JailStage::kPrepare);
  // Whatever a helper prints, the label stays one of the fixed words.
  CHECK(jail_stage_from_name("a\"new stage\n") == JailStage::kOther);
  CHECK(jail_stage_from_name("") == JailStage::kOther);
  CHECK(label(JailStage::kOther) == "other");
  CHECK(label(static_cast<JailStage>(200)) == "other");
}

TEST_CASE("kernel states: paused wins, unknown states are dead", "[metrics]") {
  CHECK(kernel_state_from("idle", true) == KernelState::kPaused);
  CHECK(kernel_state_from("busy", false) == KernelState::kBusy);
  CHECK(kernel_state_from("autorestarting", false) == KernelState::kRestarting);
  CHECK(kernel_state_from("dead", false) == KernelState::kDead);
  CHECK(kernel_state_from("???", false) == KernelState::kDead);
}

TEST_CASE("a single-writer counter adds, and readers on other threads see its value", "[metrics]") {
  SingleWriterCounter c;
  std::thread writer([&] { for (int i = 0; i < 100000; ++i) c.add(2); });
  uint64_t seen = 0;
  while (seen < 200000) {
    const uint64_t now = c.value();
    CHECK(now >= seen);  // never goes back
    seen = now;
  }
  writer.join();
  CHECK(c.value() == 200000);
}
