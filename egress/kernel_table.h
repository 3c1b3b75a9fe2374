// SPDX-License-Identifier: BSD-3-Clause
// kernel_table: what the proxy keeps per kernel — policy, caps, counters, pacing, recent audit lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "egress/policy.h"

namespace cellgate::egress {

// Limits with every field decided (the policy's, else the proxy's defaults).
struct EffectiveLimits {
  uint64_t bytes_out = 1ULL << 30;
  uint64_t bytes_in = 10ULL << 30;
  uint64_t open = 64;
  uint64_t connections = 100000;
  double rate = 50;
  uint64_t burst = 100;
};
EffectiveLimits effective_limits(const Limits& policy, const EffectiveLimits& defaults);
nlohmann::json limits_json(const EffectiveLimits& l);

// `rate` tokens per second, at most `burst` saved up.
class TokenBucket {
 public:
  TokenBucket(double rate, double burst);
  // Takes a token and returns 0, or returns how long until one is there (taking nothing).
  std::chrono::nanoseconds take(std::chrono::steady_clock::time_point now);

 private:
  double rate_, burst_, tokens_;
  std::chrono::steady_clock::time_point last_;
};

struct KernelCounters {
  uint64_t bytes_out = 0, bytes_in = 0;
  uint64_t connections = 0;  // connections and requests counted against limits.connections
  uint64_t refused = 0;
  uint64_t open = 0;
};

// runs in: the io thread (all of it).
class KernelState {
 public:
  KernelState(std::string id, std::string user, Policy policy, EffectiveLimits limits);
  const std::string id;
  std::string user;
  Policy policy;
  EffectiveLimits limits;
  KernelCounters counters;
  TokenBucket bucket;

  // Counts n bytes about to be passed on, or refuses them (counting nothing) when they would take
  // the kernel past its cap: the caller drops them and ends the connection, and the cap is spent.
  // So the counters are what the kernel sent and got, never more than its caps.
  bool charge_out(uint64_t n);
  bool charge_in(uint64_t n);
  bool out_spent() const { return out_spent_ || counters.bytes_out >= limits.bytes_out; }
  bool in_spent() const { return in_spent_ || counters.bytes_in >= limits.bytes_in; }
  bool over_bytes() const { return out_spent() || in_spent(); }

  // The last kRecent audit lines, for GET /api/kernels/{id}/egress.
  static constexpr size_t kRecent = 256;
  void remember(nlohmann::json line);
  nlohmann::json stats(size_t recent) const;

  // Open connections register how to end them (a policy change, removal).
  uint64_t on_cut(std::function<void()> cut);
  void forget_cut(uint64_t token) { cuts_.erase(token); }
  void cut_all();
  bool attached = false;

 private:
  bool out_spent_ = false, in_spent_ = false;
  std::deque<nlohmann::json> recent_;
  std::map<uint64_t, std::function<void()>> cuts_;
  uint64_t next_cut_ = 1;
};

class KernelTable {
 public:
  static constexpr size_t kDefaultMaxKernels = 4096;
  explicit KernelTable(size_t max_kernels = kDefaultMaxKernels) : max_(max_kernels) {}
  // Creates the kernel's entry or replaces its policy (open connections are cut: they were allowed
  // under the old one). Counters survive a replacement, so a restart does not refill the caps.
  common::Result<std::shared_ptr<KernelState>> set(const std::string& id, const std::string& user, Policy policy,
                                                   const EffectiveLimits& limits);
  std::shared_ptr<KernelState> find(const std::string& id) const;
  bool remove(const std::string& id);
  size_t size() const { return kernels_.size(); }
  const std::map<std::string, std::shared_ptr<KernelState>>& all() const { return kernels_; }

 private:
  size_t max_;
  std::map<std::string, std::shared_ptr<KernelState>> kernels_;
};

}  // namespace cellgate::egress
