// SPDX-License-Identifier: BSD-3-Clause
// read_pace: how fast the gateway reads one kernel's output (--kernel-output-rate), as a token bucket.
#pragma once

#include <chrono>
#include <cstdint>

namespace cellgate::launcher {

// Bytes per second, with a burst of one second's worth. The gateway reads a kernel's iopub only as
// fast as this: past it, what the kernel sends waits in its own socket and its own queue (whose memory
// is charged to its cgroup, and whose high-water mark drops the excess inside the kernel), not in the
// gateway's io thread, which every kernel shares. Used on the io thread only.
class ReadPace {
 public:
  using Clock = std::chrono::steady_clock;
  // rate 0: not paced (charge() always answers 0).
  explicit ReadPace(uint64_t bytes_per_second = 0) : rate_(bytes_per_second), tokens_(static_cast<double>(bytes_per_second)) {}
  // Counts n bytes read at now; returns how long to stop reading so that the bytes read so far stay
  // within the rate (0: read on). A read larger than the burst is let through and paid for after it.
  std::chrono::microseconds charge(uint64_t n, Clock::time_point now);
  uint64_t rate() const { return rate_; }

 private:
  uint64_t rate_;
  double tokens_;  // bytes that may still be read now; negative: the debt to wait out
  Clock::time_point refilled_{};
};

}  // namespace cellgate::launcher
