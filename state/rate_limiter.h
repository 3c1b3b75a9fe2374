// SPDX-License-Identifier: BSD-3-Clause
// rate_limiter: blocks client IPs that keep failing authentication (sliding window, LRU-bounded).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cellgate::state {

// After max_failures failed authentications from one IP within window, that IP is refused (429)
// for block_for. Memory is bounded: at most max_ips addresses are remembered; the least recently
// seen one is forgotten first. Thread-safe (one mutex; every call is O(max_failures)).
class AuthRateLimiter {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  struct Options {
    int max_failures = 10;
    std::chrono::seconds window{60};
    std::chrono::seconds block_for{60};
    size_t max_ips = 10000;
  };

  // clock: the time source; tests pass a fake one.
  explicit AuthRateLimiter(Options options, Clock clock = [] { return std::chrono::steady_clock::now(); });

  // Seconds until ip may try again (rounded up, >= 1), or 0 when it is not blocked. Ask this before
  // authenticating, so a blocked client cannot keep probing tokens.
  int retry_after(const std::string& ip);
  // Records a failed authentication from ip; returns true if this failure started a block.
  bool record_failure(const std::string& ip);
  // Addresses currently remembered (<= max_ips).
  size_t tracked() const;

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Entry {
    std::string ip;
    std::vector<TimePoint> failures;  // within the window, oldest first; at most max_failures
    TimePoint blocked_until{};
  };
  Entry& touch(const std::string& ip);  // finds or creates, moves to the front, evicts the oldest

  Options options_;
  Clock clock_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front = most recently seen
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace cellgate::state
