// SPDX-License-Identifier: BSD-3-Clause
// exit_watch: learn on the io thread that a process has exited, from its pidfd.
#pragma once

#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>

namespace cellgate::launcher {

// Waits on a pidfd (pidfd_open(2): readable once the process has exited) and calls on_exit once the
// process has exited. A readiness report alone is not taken for an exit: Asio 1.74's epoll reactor
// recycles a closed descriptor's state for the next descriptor registered, and a readiness event
// still queued for the old descriptor then completes a wait on the new one. Seen here: a kernel taken
// for dead 0.6 ms after its spawn while /proc showed it running (3 of 25 runs of test_tls.py under
// load). So each completion asks the pidfd itself (poll(2), no wait) and waits again when it says no.
class ExitWatch {
 public:
  // Watches a dup of pidfd; the caller keeps its own.
  ExitWatch(const boost::asio::any_io_executor& executor, int pidfd);
  ~ExitWatch();
  ExitWatch(const ExitWatch&) = delete;
  ExitWatch& operator=(const ExitWatch&) = delete;

  // on_exit runs on the io thread once the process has exited, and never after this watch is
  // destroyed or cancelled. It may destroy the watch. One wait at a time.
  void async_wait(std::function<void()> on_exit);
  void cancel();

 private:
  struct State;
  static void arm(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace cellgate::launcher
