// SPDX-License-Identifier: BSD-3-Clause
// kernel_exit: a kernel's process ending — death as a state (restart or dead), what its jail left
// behind, and the stops we ask for (interrupt, restart, shutdown).
#include <signal.h>

#include <filesystem>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/log.h"
#include "kernel-launcher/kernel.h"

namespace cellgate::launcher {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using common::Errc;
using common::make_error;
using namespace std::chrono_literals;

namespace {

awaitable<void> sleep_for(std::chrono::steady_clock::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  t.expires_after(d);
  boost::system::error_code ec;
  co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
}

}  // namespace

void Kernel::on_process_exit() {
  int status = reap(process_);
  std::string why = spawner_.exit_reason(process_, status);
  if (why.empty()) why = "kernel died: " + describe_wait_status(status);
  release_jail(spawner_.release(process_));
  process_.pid = -1;
  paused_ = false;
  exit_watch_.reset();
  hb_timer_.cancel();
  if (ready_signal_) ready_signal_->cancel();
  if (stopping_ || state_ == KernelState::kStarting) {
    // A shutdown, restart or start is waiting for this exit; it decides what comes next.
    reason_ = why;
    return;
  }
  close_channels();
  common::log_warn("kernel={} msg=\"kernel died\" reason=\"{}\"", id(), why);
  bool rapid = std::chrono::steady_clock::now() - launched_at_ < 30s;
  rapid_restarts_ = rapid ? rapid_restarts_ + 1 : 1;
  if (!options_.auto_restart || rapid_restarts_ > options_.max_rapid_restarts) {
    set_state(KernelState::kDead, why);
    return;
  }
  set_state(KernelState::kRestarting, why);
  asio::co_spawn(io_, restart_after_death(shared_from_this()), asio::detached);
}

void Kernel::mark_dead(std::string reason, const ProcessHandle& dead) {
  set_state(KernelState::kDead, std::move(reason));
  release_jail(spawner_.release(dead));
}

// A helper that was SIGKILLed (by an admin, the OOM killer, a crashed gateway's cleanup) leaves its
// cgroup behind, and nothing else would ever remove it. Its last tasks leave asynchronously after
// its pid namespace is gone, so this retries without blocking the io thread; the next launch waits
// for it, since a restarted jail creates a cgroup of the same name.
void Kernel::release_jail(std::function<bool()> step) {
  if (!step || step()) return;
  released_ = std::make_shared<asio::steady_timer>(io_, std::chrono::steady_clock::time_point::max());
  asio::co_spawn(io_, finish_release(shared_from_this(), std::move(step), released_), asio::detached);
}

void Kernel::discard(ProcessHandle stray) {
  common::log_warn("kernel={} pid={} msg=\"a process started for a launch that was overtaken; killed with its jail\"", id(),
                   stray.pid);
  spawner_.signal(stray, KernelSignal::kKill);
  auto it = strays_.insert(strays_.end(), Stray{std::move(stray), nullptr});
  it->watch = std::make_unique<ExitWatch>(io_.get_executor(), it->process.pidfd.get());
  it->watch->async_wait([self = shared_from_this(), it] {
    reap(it->process);
    self->release_jail(self->spawner_.release(it->process));
    self->strays_.erase(it);  // with the watch, from its own callback (exit_watch.h allows it)
  });
}

awaitable<void> Kernel::finish_release(std::shared_ptr<Kernel> self, std::function<bool()> step,
                                       std::shared_ptr<asio::steady_timer> done) {
  asio::steady_timer tick(self->io_);
  bool released = false;
  for (int attempt = 0; attempt < 100 && !released; ++attempt) {
    tick.expires_after(20ms);
    boost::system::error_code ec;
    co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;  // the gateway is stopping
    released = step();
  }
  if (!released) common::log_warn("kernel={} msg=\"its last jail's cgroup is still busy after 2 s; left behind\"", self->id());
  done->cancel();
  if (self->released_ == done) self->released_.reset();
}

awaitable<void> Kernel::restart_after_death(std::shared_ptr<Kernel> self) {
  // jupyter_client's restarter semantics: retry a bounded number of times, then declare it dead.
  while (true) {
    LaunchPermit permit;
    if (auto gate = self->relaunch_gate_) {  // a copy: the hook may be replaced while it is awaited
      const int gen = self->generation_;
      auto granted = co_await gate();
      // Shut down, or restarted by request, while waiting for its turn: that owns the kernel now.
      if (self->stopping_ || gen != self->generation_ || self->state_ != KernelState::kRestarting) co_return;
      if (!granted) {
        common::log_error("kernel={} msg=\"restart after death refused\" error=\"{}\"", self->id(), granted.error().message);
        self->set_state(KernelState::kDead, granted.error().message);
        co_return;
      }
      permit = std::move(granted.value());
    }
    auto st = co_await self->launch();
    if (st) co_return;
    common::log_error("kernel={} msg=\"restart failed\" error=\"{}\"", self->id(), st.error().message);
    if (self->stopping_ || ++self->rapid_restarts_ > self->options_.max_rapid_restarts) {
      self->set_state(KernelState::kDead, st.error().message);
      co_return;
    }
    self->set_state(KernelState::kRestarting, st.error().message);
  }
}

awaitable<bool> Kernel::wait_exit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (process_.pid > 0 && std::chrono::steady_clock::now() < deadline) co_await sleep_for(10ms);
  co_return process_.pid <= 0;
}

awaitable<void> Kernel::stop_process(bool graceful) {
  hb_timer_.cancel();
  if (graceful && process_.pid > 0) {
    send_internal(Channel::kControl, "shutdown_request", R"({"restart":false})");
    co_await wait_exit(options_.shutdown_grace);
  }
  if (process_.pid > 0) {
    spawner_.signal(process_, KernelSignal::kTerminate);
    co_await wait_exit(options_.shutdown_grace);
  }
  if (process_.pid > 0) {
    // ipykernel's own shutdown can take ~29 s when a child ignores SIGTERM; past our deadline, kill.
    spawner_.signal(process_, KernelSignal::kKill);
    co_await wait_exit(options_.shutdown_grace);
  }
  if (process_.pid > 0) {
    common::log_error("kernel={} pid={} msg=\"process did not exit after kill; SIGKILL\"", id(), process_.pid);
    ::kill(process_.pid, SIGKILL);
    co_await wait_exit(options_.shutdown_grace);
  }
  close_channels();
}

awaitable<void> Kernel::interrupt() {
  touch();
  resume();
  if (options_.spec.interrupt_mode == InterruptMode::kMessage)
    send_internal(Channel::kControl, "interrupt_request", "{}");
  else if (process_.pid > 0)
    spawner_.signal(process_, KernelSignal::kInterrupt);
  co_return;
}

awaitable<common::Status> Kernel::restart() {
  resume();
  stopping_ = true;
  set_state(KernelState::kRestarting);
  co_await stop_process(true);
  // The old process is gone whatever follows (a restart that enforces a time limit must not wait on
  // the user's other starts); the new one waits its turn, as a start does.
  LaunchPermit permit;  // held until the launch below has ended
  if (auto gate = relaunch_gate_) {  // a copy: the hook may be replaced while it is awaited
    const int gen = generation_;
    auto granted = co_await gate();
    // Shut down, detached or launched by another restart meanwhile: not this one's to launch.
    if (gen != generation_ || state_ != KernelState::kRestarting)
      co_return make_error(Errc::kUnavailable, "the kernel was stopped while its restart waited for its turn");
    if (!granted) {
      stopping_ = false;
      set_state(KernelState::kDead, granted.error().message);
      co_return granted.error();
    }
    permit = std::move(granted.value());
  }
  stopping_ = false;
  rapid_restarts_ = 0;
  co_return co_await launch();
}

awaitable<void> Kernel::shutdown() {
  resume();
  stopping_ = true;
  set_state(KernelState::kTerminating);
  co_await stop_process(true);
  ++generation_;
  set_state(KernelState::kDead, "shutdown");
  std::error_code ec;
  std::filesystem::remove_all(options_.runtime_dir, ec);
  std::filesystem::remove_all(options_.private_dir, ec);
}

}  // namespace cellgate::launcher
