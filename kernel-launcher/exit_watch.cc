// SPDX-License-Identifier: BSD-3-Clause
// exit_watch: learn on the io thread that a process has exited, from its pidfd.
#include "kernel-launcher/exit_watch.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include <boost/asio/posix/stream_descriptor.hpp>

namespace cellgate::launcher {

namespace asio = boost::asio;

struct ExitWatch::State {
  State(const asio::any_io_executor& ex, int fd) : desc(ex, fd) {}
  asio::posix::stream_descriptor desc;
  std::function<void()> on_exit;
};

namespace {

// Whether the pidfd reports its process's exit now; true as well when it cannot be polled, so nobody
// waits forever on a broken descriptor.
bool pidfd_exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  int n;
  while ((n = ::poll(&p, 1, 0)) < 0 && errno == EINTR) {
  }
  return n != 0;
}

}  // namespace

ExitWatch::ExitWatch(const asio::any_io_executor& executor, int pidfd)
    : state_(std::make_shared<State>(executor, ::dup(pidfd))) {}

ExitWatch::~ExitWatch() { cancel(); }

void ExitWatch::async_wait(std::function<void()> on_exit) {
  state_->on_exit = std::move(on_exit);
  arm(state_);
}

void ExitWatch::cancel() {
  if (!state_) return;
  state_->on_exit = nullptr;
  boost::system::error_code ec;
  state_->desc.cancel(ec);
}

void ExitWatch::arm(const std::shared_ptr<State>& state) {
  // A weak reference: the watch's owner decides its life. A completion already queued when the owner
  // destroys the watch finds nothing and does nothing.
  state->desc.async_wait(asio::posix::stream_descriptor::wait_read,
                         [weak = std::weak_ptr<State>(state)](const boost::system::error_code& ec) {
                           auto s = weak.lock();
                           if (ec || !s || !s->on_exit) return;
                           if (!pidfd_exited(s->desc.native_handle())) return arm(s);
                           auto on_exit = std::move(s->on_exit);
                           s->on_exit = nullptr;
                           on_exit();  // s keeps the state alive if on_exit destroys the watch
                         });
}

}  // namespace cellgate::launcher
