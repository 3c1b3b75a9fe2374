// SPDX-License-Identifier: BSD-3-Clause
// counters: event counts and levels that hot paths bump with one relaxed atomic add.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cellgate::metrics {

// A monotonic count. Thread-safe; add() is one relaxed atomic add: no lock, no allocation.
class Counter {
 public:
  void add(uint64_t n = 1) noexcept { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A count with one writing thread (the io thread) and any readers: the add is a plain load and
// store of an atomic, no locked instruction (a relaxed fetch_add is a `lock xadd`, ~10 ns on a
// busy VM). Adds from a second thread could be lost, never torn.
class SingleWriterCounter {
 public:
  void add(uint64_t n = 1) noexcept { value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// A level that goes up and down (open WebSockets). Thread-safe; same cost as Counter.
class Level {
 public:
  void up() noexcept { value_.fetch_add(1, std::memory_order_relaxed); }
  void down() noexcept { value_.fetch_sub(1, std::memory_order_relaxed); }
  int64_t value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Counters over one label whose values are an enum ending in kCount: the label's cardinality is
// fixed at compile time, and a hook indexes an array instead of looking a label set up.
template <typename Enum>
class CounterByLabel {
 public:
  static constexpr size_t kSize = static_cast<size_t>(Enum::kCount);
  Counter& operator[](Enum e) noexcept { return counters_[static_cast<size_t>(e)]; }
  const Counter& operator[](Enum e) const noexcept { return counters_[static_cast<size_t>(e)]; }

 private:
  std::array<Counter, kSize> counters_{};
};

}  // namespace cellgate::metrics
