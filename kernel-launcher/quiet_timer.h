// SPDX-License-Identifier: BSD-3-Clause
// quiet_timer: a one-shot timer on the io thread whose disarm never wakes that thread.
//
// An asio::steady_timer cancelled before it expires still wakes the io thread at its old
// deadline: Asio's epoll reactor re-programs its timerfd only when a new earliest timer is
// scheduled, never on cancel (boost/asio/detail/impl/epoll_reactor.ipp, cancel_timer). A timer
// that almost always ends early, as the iopub hold does once per execute, costs a wake each time.
// This one owns a timerfd (timerfd_create(2)); disarming it is one timerfd_settime(2).
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace cellgate::launcher {

class QuietTimer {
 public:
  // on_fire runs on the io thread when an armed timer expires (not when it is disarmed).
  QuietTimer(boost::asio::io_context& io, std::function<void()> on_fire);
  ~QuietTimer();
  QuietTimer(const QuietTimer&) = delete;
  QuietTimer& operator=(const QuietTimer&) = delete;

  // Fires once, after `after`, unless disarmed first; arming again moves the deadline. The timerfd
  // is made on the first arm. Returns false when it cannot be made (the fd limit, say).
  bool arm(std::chrono::microseconds after);
  void disarm();
  bool armed() const { return armed_; }

 private:
  void wait();

  boost::asio::posix::stream_descriptor desc_;
  std::function<void()> on_fire_;
  bool armed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace cellgate::launcher
