// SPDX-License-Identifier: BSD-3-Clause
// quiet_timer: a one-shot timer on the io thread whose disarm never wakes that thread.
#include "kernel-launcher/quiet_timer.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace cellgate::launcher {

namespace asio = boost::asio;

QuietTimer::QuietTimer(asio::io_context& io, std::function<void()> on_fire)
    : desc_(io), on_fire_(std::move(on_fire)) {}

QuietTimer::~QuietTimer() {
  *alive_ = false;
  boost::system::error_code ec;
  desc_.close(ec);
}

bool QuietTimer::arm(std::chrono::microseconds after) {
  if (!desc_.is_open()) {
    int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) return false;
    boost::system::error_code ec;
    desc_.assign(fd, ec);
    if (ec) {
      ::close(fd);
      return false;
    }
    wait();  // one wait stays pending for the timer's whole life: an expiry is never missed
  }
  auto us = std::max<int64_t>(after.count(), 1);  // an all-zero it_value would disarm it instead
  itimerspec spec{};
  spec.it_value.tv_sec = us / 1000000;
  spec.it_value.tv_nsec = (us % 1000000) * 1000;
  if (::timerfd_settime(desc_.native_handle(), 0, &spec, nullptr) != 0) return false;
  armed_ = true;
  return true;
}

void QuietTimer::disarm() {
  if (!armed_) return;
  armed_ = false;
  itimerspec off{};
  // Also zeroes an expiry count not read yet (fs/timerfd.c, timerfd_setup): a wake already on its
  // way then reads EAGAIN below and fires nothing.
  ::timerfd_settime(desc_.native_handle(), 0, &off, nullptr);
}

void QuietTimer::wait() {
  desc_.async_wait(asio::posix::stream_descriptor::wait_read,
                   [this, alive = alive_](const boost::system::error_code& ec) {
                     if (!*alive) return;
                     if (ec) {
                       // Only close() cancels this wait, and that clears alive. A wait the reactor
                       // refused must not leave an armed timer silent for good (a hold would then
                       // last until the reply): fire now, and make a new timerfd at the next arm.
                       boost::system::error_code ignored;
                       desc_.close(ignored);
                       if (armed_) {
                         armed_ = false;
                         on_fire_();
                       }
                       return;
                     }
                     uint64_t expiries = 0;
                     bool expired = ::read(desc_.native_handle(), &expiries, sizeof expiries) == sizeof expiries;
                     wait();
                     if (expired && armed_) {
                       armed_ = false;
                       on_fire_();
                     }
                   });
}

}  // namespace cellgate::launcher
