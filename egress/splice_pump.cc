// SPDX-License-Identifier: BSD-3-Clause
// splice_pump: bytes from one TCP socket to another through a pipe (splice(2)), never in user space.
#include "egress/splice_pump.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cellgate::egress {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// Larger pipes mean fewer hand-offs between the proxy, the upstream and the kernel's client, each a
// wake-up and, on a busy host, a wait for a CPU. 1 MiB is pipe-max-size's default (pipe(7)); when the
// uid's pipe pages are used up (pipe-user-pages-soft) the default 64 KiB stays.
constexpr int kPipeBytes = 1 << 20;

// Waits until `s` is ready, at most `idle`; false when it timed out (both sockets are cancelled).
asio::awaitable<boost::system::error_code> ready(tcp::socket& s, tcp::socket::wait_type type, tcp::socket& other,
                                                 std::chrono::milliseconds idle, bool& timed_out) {
  asio::steady_timer timer(co_await asio::this_coro::executor, idle);
  timer.async_wait([&s, &other, &timed_out](boost::system::error_code ec) {
    if (ec) return;  // cancelled: the wait ended first; nothing here may be touched
    timed_out = true;
    boost::system::error_code ignored;
    s.cancel(ignored);
    other.cancel(ignored);
  });
  boost::system::error_code ec;
  co_await s.async_wait(type, asio::redirect_error(asio::use_awaitable, ec));
  timer.cancel();
  co_return ec;
}

}  // namespace

std::optional<SplicePipe> SplicePipe::make() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return std::nullopt;
  SplicePipe p;
  p.r_.reset(fds[0]);
  p.w_.reset(fds[1]);
  if (::fcntl(fds[1], F_SETPIPE_SZ, kPipeBytes) > 0) {
    int size = ::fcntl(fds[1], F_GETPIPE_SZ);
    if (size > 0) p.capacity_ = static_cast<size_t>(size);
  }
  return p;
}

asio::awaitable<SpliceResult> splice_bytes(tcp::socket& from, tcp::socket& to, SplicePipe& pipe, uint64_t limit,
                                           const std::function<bool(uint64_t)>& charge, std::chrono::milliseconds idle,
                                           std::chrono::steady_clock::time_point* activity) {
  SpliceResult r;
  boost::system::error_code ec;
  from.native_non_blocking(true, ec);
  to.native_non_blocking(true, ec);
  bool timed_out = false;
  auto failed = [&](const char* what, int err) {
    r.error = timed_out ? "idle for too long" : std::string(what) + ": " + std::strerror(err);
  };
  while (r.moved < limit || pipe.held > 0) {
    if (pipe.held == 0) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(pipe.capacity(), limit - r.moved));
      ssize_t n = ::splice(from.native_handle(), nullptr, pipe.write_end(), nullptr, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n < 0 && errno == EAGAIN) {
        ec = co_await ready(from, tcp::socket::wait_read, to, idle, timed_out);
        if (ec) {
          failed("read", ec == asio::error::operation_aborted ? ECANCELED : ec.value());
          co_return r;
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        failed("read", errno);
        co_return r;
      }
      if (n == 0) {
        r.eof = true;
        co_return r;
      }
      if (activity != nullptr) *activity = std::chrono::steady_clock::now();
      if (!charge(static_cast<uint64_t>(n))) {
        r.error = "egress byte cap reached";
        co_return r;
      }
      pipe.held = static_cast<size_t>(n);
    }
    ssize_t m = ::splice(pipe.read_end(), nullptr, to.native_handle(), nullptr, pipe.held, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (m < 0 && errno == EAGAIN) {
      ec = co_await ready(to, tcp::socket::wait_write, from, idle, timed_out);
      if (ec) {
        failed("write", ec == asio::error::operation_aborted ? ECANCELED : ec.value());
        co_return r;
      }
      continue;
    }
    if (m < 0 && errno == EINTR) continue;
    if (m <= 0) {
      failed("write", m < 0 ? errno : EPIPE);
      co_return r;
    }
    pipe.held -= static_cast<size_t>(m);
    r.moved += static_cast<uint64_t>(m);
    if (activity != nullptr) *activity = std::chrono::steady_clock::now();
  }
  co_return r;
}

}  // namespace cellgate::egress
