// SPDX-License-Identifier: BSD-3-Clause
// turn_lock: one coroutine at a time through a section that spans co_awaits, for coroutines of one io
// thread (Boost 1.74's asio has no asynchronous mutex). Turns are given in the order they were asked.
#pragma once

#include <chrono>
#include <deque>
#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cellgate::gateway {

// Io thread only; it must outlive every Turn taken from it. A waiter is a timer that never expires by
// itself: the turn before it cancels it, which hands the turn over (held_ stays true in between).
class TurnLock {
 public:
  class Turn {
   public:
    explicit Turn(TurnLock* lock) : lock_(lock) {}
    Turn(Turn&& other) noexcept : lock_(other.lock_) { other.lock_ = nullptr; }
    Turn& operator=(Turn&&) = delete;
    ~Turn() {
      if (lock_) lock_->pass();
    }

   private:
    TurnLock* lock_;
  };

  boost::asio::awaitable<Turn> acquire() {
    if (!held_) {
      held_ = true;
      co_return Turn(this);
    }
    auto ex = co_await boost::asio::this_coro::executor;
    auto waiter = std::make_shared<boost::asio::steady_timer>(ex, boost::asio::steady_timer::time_point::max());
    waiters_.push_back(waiter);
    boost::system::error_code ec;
    co_await waiter->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    co_return Turn(this);
  }

  bool held() const { return held_; }

 private:
  void pass() {
    if (waiters_.empty()) {
      held_ = false;
      return;
    }
    auto next = std::move(waiters_.front());
    waiters_.pop_front();
    next->cancel();
  }

  bool held_ = false;
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace cellgate::gateway
