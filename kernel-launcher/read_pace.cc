// SPDX-License-Identifier: BSD-3-Clause
// read_pace: how fast the gateway reads one kernel's output, as a token bucket.
#include "kernel-launcher/read_pace.h"

#include <algorithm>
#include <cmath>

namespace cellgate::launcher {

std::chrono::microseconds ReadPace::charge(uint64_t n, Clock::time_point now) {
  if (rate_ == 0) return std::chrono::microseconds(0);
  const double rate = static_cast<double>(rate_);
  if (refilled_ != Clock::time_point{}) {
    const double seconds = std::chrono::duration<double>(now - refilled_).count();
    if (seconds > 0) tokens_ = std::min(rate, tokens_ + seconds * rate);
  }
  refilled_ = now;
  tokens_ -= static_cast<double>(n);
  if (tokens_ > -1.0) return std::chrono::microseconds(0);  // less than a byte owed: rounding
  return std::chrono::microseconds(static_cast<int64_t>(std::ceil(-tokens_ / rate * 1e6)));
}

}  // namespace cellgate::launcher
