// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "metrics/cpu_ledger.h"

using namespace cellgate::metrics;

TEST_CASE("the CPU total does not drop when a kernel stops or restarts", "[metrics][cpu]") {
  CpuLedger l;
  const CpuLedger::Process a{"k1", 100}, b{"k2", 200}, a_restarted{"k1", 101};
  l.observe(a, "ana", 2.5);
  l.observe(b, "bob", 1.0);
  l.retire_all_but({a, b});
  CHECK(l.total() == Approx(3.5));
  // k1 restarts: its new process's cgroup counts from zero; k2 stops.
  l.observe(a_restarted, "ana", 0.25);
  l.retire_all_but({a_restarted});
  CHECK(l.total() == Approx(3.75));
  CHECK(l.by_owner().at("ana") == Approx(2.75));
  CHECK(l.by_owner().at("bob") == Approx(1.0));
  // A reading that fails (0: the cgroup is gone) or goes back changes nothing.
  l.observe(a_restarted, "ana", 0);
  l.observe(a_restarted, "ana", 0.1);
  CHECK(l.total() == Approx(3.75));
  l.retire_all_but({});
  CHECK(l.total() == Approx(3.75));
}

TEST_CASE("the CPU total never goes down by a rounding error as readings retire", "[metrics][cpu]") {
  CpuLedger l;
  std::set<CpuLedger::Process> running;
  for (int i = 0; i < 200; ++i) {
    running.insert({"k" + std::to_string(i), i});
    l.observe({"k" + std::to_string(i), i}, "u" + std::to_string(i % 7), 0.1 * i + 1e-7 * i);
  }
  l.retire_all_but(running);
  double last = l.total();
  while (!running.empty()) {
    running.erase(running.begin());
    l.retire_all_but(running);
    CHECK(l.total() >= last);
    last = l.total();
  }
}
