// SPDX-License-Identifier: BSD-3-Clause
// start_gate: bounds the kernel starts in flight, in all and per user. The excess waits in a bounded
// queue, in arrival order among the starts the bounds let through, or is refused naming the bound.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"

namespace cellgate::gateway {

struct StartLimits {
  int in_flight = 8;           // starts at once, all users together (--max-starting); 0 = no bound
  int in_flight_per_user = 4;  // starts at once, per user (--max-starting-per-user); 0 = no bound
  int queue = 64;              // starts waiting, all users together (--start-queue): past it 503
  int queue_per_user = 16;     // starts waiting, per user (--start-queue-per-user): past it 429
  std::chrono::milliseconds wait{60000};  // the longest wait in the queue: past it 503 (429 if only
                                          // the user's own bound held it)
};

// Io thread only. What waits costs a coroutine frame and a timer; both queues bound it, the user's
// own charged to that user.
class StartGate {
 public:
  struct State;
  // One start's place: held while the start runs, given back (to the first waiter it lets through)
  // when destroyed. It may outlive the gate (a coroutine frame destroyed with the io context).
  class Slot {
   public:
    Slot(std::weak_ptr<State> state, std::string user);
    ~Slot();
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;

   private:
    std::weak_ptr<State> state_;
    std::string user_;
  };

  StartGate(boost::asio::io_context& io, StartLimits limits);
  ~StartGate();
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;

  // A slot for one of user's starts: at once when both bounds allow it, else after waiting for one.
  // Errors, the message naming the bound: kTooManyRequests (429) when the user's own bounds refuse it
  // (their queue is full, or their wait ran out while the gateway had room); kUnavailable (503: the
  // gateway is busy, try again later) when the whole queue is full, the wait for a gateway-wide slot
  // ran out, or the gate closed.
  boost::asio::awaitable<common::Result<Slot>> enter(std::string user);
  // Refuses every waiting start and any later one (the gateway is stopping).
  void close();
  // {"in_flight", "queued", "limits": {...}} for GET /api/status.
  nlohmann::json status() const;

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<State> state_;
};

}  // namespace cellgate::gateway
