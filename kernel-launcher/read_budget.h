// SPDX-License-Identifier: BSD-3-Clause
// read_budget: how much memory the kernels' large incoming messages may hold in the gateway at once.
#pragma once

#include <cstdint>

namespace cellgate::launcher {

// What the large messages of every kernel may hold in the gateway at once (--kernel-read-budget):
// with only a per-message bound, N kernels could make the gateway hold N messages just under it.
// Buffers up to kFloor are everyday and not counted. Used on the io thread only.
class ReadBudget {
 public:
  static constexpr uint64_t kFloor = 512u << 10;
  explicit ReadBudget(uint64_t bytes) : limit_(bytes) {}
  bool take(uint64_t n) {
    if (n > limit_ - held_) return false;
    held_ += n;
    return true;
  }
  void give(uint64_t n) { held_ -= n; }
  uint64_t held() const { return held_; }

 private:
  uint64_t limit_;
  uint64_t held_ = 0;
};

}  // namespace cellgate::launcher
