// SPDX-License-Identifier: BSD-3-Clause
// execute_clock: which execution the time limit is timing, by the gateway's own count of the shell.
#include "gateway/execute_clock.h"

#include <algorithm>

namespace cellgate::gateway {

bool ExecuteClock::sent(const std::string& msg_id, bool limited) {
  if (msg_id.empty() || entries_.size() >= kMaxTracked || entries_.count(msg_id)) return false;
  entries_.emplace(msg_id, Entry{limited});
  order_.push_back(msg_id);
  start_front();
  return true;
}

void ExecuteClock::busy(const std::string& msg_id) {
  auto it = entries_.find(msg_id);
  if (it == entries_.end()) return;
  start(msg_id, it->second);
  // The shell runs in order, so the replied executes ahead of this one have ended even if their idle
  // never came (an iopub PUB socket drops messages a slow reader has not taken: ZMQ_SNDHWM).
  std::vector<std::string> ended;
  for (const auto& id : order_) {
    if (id == msg_id) break;
    if (entries_.at(id).replied) ended.push_back(id);
  }
  for (const auto& id : ended) erase(id);
  if (!ended.empty()) start_front();
}

void ExecuteClock::replied(const std::string& msg_id, bool aborted) {
  auto it = entries_.find(msg_id);
  if (it == entries_.end()) return;
  it->second.replied = true;
  if (aborted) it->second.idle = true;
  end_if_done(msg_id);
}

void ExecuteClock::idle(const std::string& msg_id) {
  auto it = entries_.find(msg_id);
  if (it == entries_.end()) return;
  it->second.idle = true;
  end_if_done(msg_id);
}

void ExecuteClock::forget(const std::string& msg_id) {
  if (!entries_.count(msg_id)) return;
  erase(msg_id);
  start_front();
}

void ExecuteClock::clear() {
  entries_.clear();
  order_.clear();
  started_.clear();
  ended_.clear();
}

void ExecuteClock::start(const std::string& msg_id, Entry& e) {
  if (!e.limited || e.running) return;
  e.running = true;
  started_.push_back(msg_id);
}

void ExecuteClock::end_if_done(const std::string& msg_id) {
  const Entry& e = entries_.at(msg_id);
  if (!e.replied || !e.idle) return;
  erase(msg_id);
  start_front();
}

void ExecuteClock::erase(const std::string& msg_id) {
  auto it = entries_.find(msg_id);
  if (it->second.limited) {  // whether its clock was taken yet or not: it must not be armed after this
    std::erase(started_, msg_id);
    ended_.push_back(msg_id);
  }
  entries_.erase(it);
  order_.erase(std::find(order_.begin(), order_.end(), msg_id));
}

void ExecuteClock::start_front() {
  if (!order_.empty()) start(order_.front(), entries_.at(order_.front()));
}

}  // namespace cellgate::gateway
