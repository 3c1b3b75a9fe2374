// SPDX-License-Identifier: BSD-3-Clause
// execute_clock: which execution the time limit is timing, by the gateway's own count of the shell.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cellgate::gateway {

// A kernel runs its shell requests one at a time, in the order they came (ipykernel's and xeus's
// dispatch). The clock keeps the executes the gateway sent, oldest first, each until both its
// execute_reply and its idle have come (an aborted reply alone: replied()), or the gateway gives up on it. A limited execute's clock
// starts when every execute sent before it has ended here (the shell is free by the gateway's count),
// or at its busy if that comes first.
//
// Why both, and why the gateway's count: a cell holds its kernel's key and sockets. It can send its
// own request's execute_reply and run on (the reply alone ends nothing), or the reply and the idle
// (its request ends here, and the next execute's clock starts when the gateway sends it: its limit
// interrupts the cell still running ahead of it). Timing a request from its busy alone let a cell
// withhold every later busy by running on. What it cannot be kept from is a thread of its own, bound by
// its cgroup, not by this.
//
// Pure bookkeeping: the hub arms the timers for started() and disarms them for ended().
class ExecuteClock {
 public:
  static constexpr size_t kMaxTracked = 1024;  // executes per kernel, queued or running

  // An execute_request the gateway sends on shell. False, and nothing kept, when the table is full or
  // its msg_id is already in it: a limited execute must then not be sent, or it would escape its limit
  // (an unlimited one, the gateway's own, may go untracked).
  bool sent(const std::string& msg_id, bool limited);
  // What the kernel said about msg_id (ignored unless it is tracked). A busy also ends the replied
  // executes ahead of it, whose idle was lost (the shell runs in order).
  void busy(const std::string& msg_id);
  // An aborted reply ends the execute by itself: a kernel that drops requests after an interrupt or
  // an error may send no busy or idle for them (IRkernel's abort_shell_msg sends the reply alone).
  // Forged, it frees no more than a forged reply and idle would.
  void replied(const std::string& msg_id, bool aborted = false);
  void idle(const std::string& msg_id);
  // The gateway stopped waiting for msg_id (its own request timed out): it holds no later clock back.
  void forget(const std::string& msg_id);
  void clear();  // the kernel restarted or died: no reply will come (nothing is reported ended)

  bool tracking(const std::string& msg_id) const { return entries_.count(msg_id) != 0; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

  // Limited executes whose clock starts now, and limited executes that ended, since the last call.
  std::vector<std::string> take_started() { return std::exchange(started_, {}); }
  std::vector<std::string> take_ended() { return std::exchange(ended_, {}); }

 private:
  struct Entry {
    bool limited = false;
    bool running = false;  // its clock was started
    bool replied = false;
    bool idle = false;
  };
  void start(const std::string& msg_id, Entry& e);
  void end_if_done(const std::string& msg_id);
  void erase(const std::string& msg_id);
  void start_front();

  std::deque<std::string> order_;                   // oldest first
  std::unordered_map<std::string, Entry> entries_;
  std::vector<std::string> started_;
  std::vector<std::string> ended_;
};

}  // namespace cellgate::gateway
