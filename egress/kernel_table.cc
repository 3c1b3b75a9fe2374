// SPDX-License-Identifier: BSD-3-Clause
// kernel_table: what the proxy keeps per kernel — policy, caps, counters, pacing, recent audit lines.
#include "egress/kernel_table.h"

#include <algorithm>
#include <cmath>

namespace cellgate::egress {

EffectiveLimits effective_limits(const Limits& policy, const EffectiveLimits& defaults) {
  EffectiveLimits l = defaults;
  if (policy.bytes_out) l.bytes_out = *policy.bytes_out;
  if (policy.bytes_in) l.bytes_in = *policy.bytes_in;
  if (policy.open) l.open = *policy.open;
  if (policy.connections) l.connections = *policy.connections;
  if (policy.rate) l.rate = *policy.rate;
  if (policy.burst) l.burst = *policy.burst;
  return l;
}

nlohmann::json limits_json(const EffectiveLimits& l) {
  return {{"bytes_out", l.bytes_out}, {"bytes_in", l.bytes_in}, {"open", l.open},
          {"connections", l.connections}, {"rate", l.rate}, {"burst", l.burst}};
}

TokenBucket::TokenBucket(double rate, double burst)
    : rate_(rate), burst_(std::max(1.0, burst)), tokens_(std::max(1.0, burst)), last_(std::chrono::steady_clock::now()) {}

std::chrono::nanoseconds TokenBucket::take(std::chrono::steady_clock::time_point now) {
  double elapsed = std::chrono::duration<double>(now - last_).count();
  if (elapsed > 0) {
    tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
    last_ = now;
  }
  if (tokens_ >= 1) {
    tokens_ -= 1;
    return std::chrono::nanoseconds(0);
  }
  double wait = (1 - tokens_) / rate_;
  return std::chrono::nanoseconds(static_cast<int64_t>(std::ceil(wait * 1e9)));
}

KernelState::KernelState(std::string kernel_id, std::string owner, Policy kernel_policy, EffectiveLimits kernel_limits)
    : id(std::move(kernel_id)), user(std::move(owner)), policy(std::move(kernel_policy)), limits(kernel_limits),
      bucket(kernel_limits.rate, static_cast<double>(kernel_limits.burst)) {}

bool KernelState::charge_out(uint64_t n) {
  if (out_spent_ || n > limits.bytes_out - std::min(counters.bytes_out, limits.bytes_out)) {
    out_spent_ = true;
    return false;
  }
  counters.bytes_out += n;
  return true;
}

bool KernelState::charge_in(uint64_t n) {
  if (in_spent_ || n > limits.bytes_in - std::min(counters.bytes_in, limits.bytes_in)) {
    in_spent_ = true;
    return false;
  }
  counters.bytes_in += n;
  return true;
}

void KernelState::remember(nlohmann::json line) {
  if (recent_.size() >= kRecent) recent_.pop_front();
  recent_.push_back(std::move(line));
}

nlohmann::json KernelState::stats(size_t recent) const {
  nlohmann::json lines = nlohmann::json::array();
  size_t skip = recent_.size() > recent ? recent_.size() - recent : 0;
  for (size_t i = skip; i < recent_.size(); ++i) lines.push_back(recent_[i]);
  return {{"kernel", id},
          {"user", user},
          {"attached", attached},
          {"policy", policy_json(policy)},
          {"limits", limits_json(limits)},
          {"counters",
           {{"bytes_out", counters.bytes_out}, {"bytes_in", counters.bytes_in}, {"connections", counters.connections},
            {"refused", counters.refused}, {"open", counters.open}}},
          {"recent", std::move(lines)}};
}

uint64_t KernelState::on_cut(std::function<void()> cut) {
  uint64_t token = next_cut_++;
  cuts_.emplace(token, std::move(cut));
  return token;
}

void KernelState::cut_all() {
  auto cuts = std::move(cuts_);
  cuts_.clear();
  for (auto& [token, cut] : cuts) cut();
}

common::Result<std::shared_ptr<KernelState>> KernelTable::set(const std::string& id, const std::string& user, Policy policy,
                                                              const EffectiveLimits& limits) {
  if (auto it = kernels_.find(id); it != kernels_.end()) {
    auto& k = it->second;
    k->user = user;
    k->policy = std::move(policy);
    k->limits = limits;
    k->bucket = TokenBucket(limits.rate, static_cast<double>(limits.burst));
    k->cut_all();
    return k;
  }
  if (kernels_.size() >= max_) return common::make_error(common::Errc::kUnavailable, "the proxy holds its maximum of kernels");
  auto k = std::make_shared<KernelState>(id, user, std::move(policy), limits);
  kernels_.emplace(id, k);
  return k;
}

std::shared_ptr<KernelState> KernelTable::find(const std::string& id) const {
  auto it = kernels_.find(id);
  return it == kernels_.end() ? nullptr : it->second;
}

bool KernelTable::remove(const std::string& id) {
  auto it = kernels_.find(id);
  if (it == kernels_.end()) return false;
  it->second->cut_all();
  kernels_.erase(it);
  return true;
}

}  // namespace cellgate::egress
