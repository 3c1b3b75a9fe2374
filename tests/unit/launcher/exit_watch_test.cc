// SPDX-License-Identifier: BSD-3-Clause
// exit_watch tests: a readiness event that Asio queued for a closed descriptor must not pass for a
// process's exit when the descriptor's state is recycled for the process's pidfd.
#include "kernel-launcher/exit_watch.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <catch2/catch.hpp>

using cellgate::launcher::ExitWatch;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct Child {
  pid_t pid = ::fork();
  int pidfd = -1;
  Child() {
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
    pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  }
  void end() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Child() {
    end();
    if (pidfd >= 0) ::close(pidfd);
  }
};

// Two readable sockets, B registered before A, so one epoll_wait reports B then A and the io loop
// runs B's completion first. That completion closes A and starts a wait on a new descriptor, which
// Asio 1.74 gives A's recycled state while A's readiness is still queued behind B's. `start` starts
// the wait on the new descriptor; the loop then runs A's stale readiness against it.
template <typename Start>
void recycle_a_ready_descriptor_into(asio::io_context& io, Start start) {
  int a[2], b[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a) == 0);
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b) == 0);
  REQUIRE(::write(b[1], "x", 1) == 1);
  asio::posix::stream_descriptor db(io, b[0]);
  REQUIRE(::write(a[1], "x", 1) == 1);
  auto da = std::make_unique<asio::posix::stream_descriptor>(io, a[0]);
  db.async_wait(asio::posix::stream_descriptor::wait_read, [&](const boost::system::error_code&) {
    da.reset();
    start();
  });
  io.run_for(300ms);
  ::close(a[1]);
  ::close(b[1]);
}

}  // namespace

TEST_CASE("exit_watch: Asio 1.74 completes a plain wait on a recycled descriptor with a stale readiness") {
  // Why ExitWatch asks the pidfd: if this stops holding (a newer Asio), the check costs one poll(2).
  asio::io_context io;
  Child child;
  REQUIRE(child.pidfd >= 0);
  std::unique_ptr<asio::posix::stream_descriptor> plain;
  bool completed = false;
  recycle_a_ready_descriptor_into(io, [&] {
    plain = std::make_unique<asio::posix::stream_descriptor>(io, ::dup(child.pidfd));
    plain->async_wait(asio::posix::stream_descriptor::wait_read,
                      [&](const boost::system::error_code& ec) { completed = !ec; });
  });
  CHECK(completed);  // the child is alive: this completion is the stale one
  CHECK(::kill(child.pid, 0) == 0);
}

TEST_CASE("exit_watch: a stale readiness is not an exit; the real exit is") {
  asio::io_context io;
  Child child;
  REQUIRE(child.pidfd >= 0);
  std::unique_ptr<ExitWatch> watch;
  int exits = 0;
  recycle_a_ready_descriptor_into(io, [&] {
    watch = std::make_unique<ExitWatch>(io.get_executor(), child.pidfd);
    watch->async_wait([&] { ++exits; });
  });
  CHECK(exits == 0);
  child.end();
  io.restart();
  io.run_for(2s);
  CHECK(exits == 1);
}

TEST_CASE("exit_watch: no call after the watch is cancelled or destroyed; the callback may destroy it") {
  asio::io_context io;
  SECTION("cancelled") {
    Child child;
    ExitWatch watch(io.get_executor(), child.pidfd);
    bool called = false;
    watch.async_wait([&] { called = true; });
    watch.cancel();
    child.end();
    io.run_for(300ms);
    CHECK_FALSE(called);
  }
  SECTION("destroyed in its own callback") {
    Child child;
    auto watch = std::make_unique<ExitWatch>(io.get_executor(), child.pidfd);
    bool called = false;
    watch->async_wait([&] {
      called = true;
      watch.reset();
    });
    child.end();
    io.run_for(2s);
    CHECK(called);
    CHECK(watch == nullptr);
  }
}
