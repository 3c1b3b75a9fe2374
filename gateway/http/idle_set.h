// SPDX-License-Identifier: BSD-3-Clause
// idle_set: the bookkeeping of kept-alive connections apart from their sockets: per key (a node's
// address), at most max_per_key items, none kept max_idle or longer. Pure, so that it is unit-tested.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cellgate::http {

// Not thread-safe (the io thread's). Items of one key are kept oldest first.
template <class T>
class IdleSet {
 public:
  using Clock = std::chrono::steady_clock;

  IdleSet(size_t max_per_key, Clock::duration max_idle) : max_per_key_(max_per_key), max_idle_(max_idle) {}

  // Keeps item under key, idle since now. A key already at its bound gives up its oldest item, returned
  // for the caller to close (so is item itself when max_per_key is 0).
  std::optional<T> put(const std::string& key, T item, Clock::time_point now) {
    if (max_per_key_ == 0) return std::optional<T>(std::move(item));
    auto& items = keys_[key];
    std::optional<T> evicted;
    if (items.size() >= max_per_key_) {
      evicted.emplace(std::move(items.front().item));
      items.pop_front();
      --size_;
    }
    items.push_back({std::move(item), now});
    ++size_;
    return evicted;
  }

  // The newest item under key that has been idle less than max_idle (the most recently used: the least
  // likely to have been closed by the peer), removed from the set; nullopt when there is none.
  std::optional<T> take(const std::string& key, Clock::time_point now) {
    auto it = keys_.find(key);
    if (it == keys_.end()) return std::nullopt;
    auto& items = it->second;
    std::optional<T> out;
    if (!items.empty() && now - items.back().since < max_idle_) {
      out.emplace(std::move(items.back().item));
      items.pop_back();
      --size_;
    }
    if (items.empty()) keys_.erase(it);
    return out;
  }

  // Removes every item idle for max_idle or longer at now, and returns them (to be closed).
  std::vector<T> expire(Clock::time_point now) {
    std::vector<T> out;
    for (auto it = keys_.begin(); it != keys_.end();) {
      auto& items = it->second;
      while (!items.empty() && now - items.front().since >= max_idle_) {
        out.push_back(std::move(items.front().item));
        items.pop_front();
        --size_;
      }
      it = items.empty() ? keys_.erase(it) : std::next(it);
    }
    return out;
  }

  // Removes everything, and returns it.
  std::vector<T> clear() {
    std::vector<T> out;
    for (auto& [key, items] : keys_)
      for (auto& idle : items) out.push_back(std::move(idle.item));
    keys_.clear();
    size_ = 0;
    return out;
  }

  // When the next item reaches max_idle; nullopt when the set is empty.
  std::optional<Clock::time_point> next_expiry() const {
    std::optional<Clock::time_point> first;
    for (const auto& [key, items] : keys_)
      if (!items.empty() && (!first || items.front().since < *first)) first = items.front().since;
    if (first) *first += max_idle_;
    return first;
  }

  size_t size() const { return size_; }
  size_t size(const std::string& key) const {
    auto it = keys_.find(key);
    return it == keys_.end() ? 0 : it->second.size();
  }

 private:
  struct Idle {
    T item;
    Clock::time_point since;
  };
  size_t max_per_key_;
  Clock::duration max_idle_;
  std::map<std::string, std::deque<Idle>> keys_;
  size_t size_ = 0;
};

}  // namespace cellgate::http
