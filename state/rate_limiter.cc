// SPDX-License-Identifier: BSD-3-Clause
// rate_limiter: blocks client IPs that keep failing authentication (sliding window, LRU-bounded).
#include "state/rate_limiter.h"

#include <algorithm>

#include "common/assert.h"

namespace cellgate::state {

AuthRateLimiter::AuthRateLimiter(Options options, Clock clock) : options_(options), clock_(std::move(clock)) {
  CELLGATE_ASSERT(options_.max_failures > 0 && options_.max_ips > 0 && clock_);
}

int AuthRateLimiter::retry_after(const std::string& ip) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(ip);
  if (it == index_.end()) return 0;
  const auto now = clock_();
  const auto until = it->second->blocked_until;
  if (until <= now) return 0;
  // Round up: a client told "retry after 0" while still blocked would retry at once.
  auto left = std::chrono::ceil<std::chrono::seconds>(until - now).count();
  return static_cast<int>(std::max<std::chrono::seconds::rep>(left, 1));
}

bool AuthRateLimiter::record_failure(const std::string& ip) {
  std::lock_guard lock(mutex_);
  const auto now = clock_();
  Entry& e = touch(ip);
  if (e.blocked_until > now) return false;  // already blocked; a block is not extended by retries
  // Sliding window: forget failures older than the window, then add this one.
  auto first_live = std::find_if(e.failures.begin(), e.failures.end(),
                                 [&](TimePoint t) { return now - t < options_.window; });
  e.failures.erase(e.failures.begin(), first_live);
  e.failures.push_back(now);
  if (e.failures.size() < static_cast<size_t>(options_.max_failures)) return false;
  e.failures.clear();
  e.blocked_until = now + options_.block_for;
  return true;
}

size_t AuthRateLimiter::tracked() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

AuthRateLimiter::Entry& AuthRateLimiter::touch(const std::string& ip) {
  auto it = index_.find(ip);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front();
  }
  if (lru_.size() >= options_.max_ips) {
    index_.erase(lru_.back().ip);
    lru_.pop_back();
  }
  lru_.push_front(Entry{ip, {}, {}});
  index_[ip] = lru_.begin();
  return lru_.front();
}

}  // namespace cellgate::state
