// SPDX-License-Identifier: BSD-3-Clause
// process_runner: run one command to completion with bounded output, optional stdin and a deadline.
#include "kernel-launcher/process_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include "common/unique_fd.h"
#include "kernel-launcher/exit_watch.h"
#include "kernel-launcher/spawn_util.h"

namespace cellgate::launcher {

namespace asio = boost::asio;
using common::Errc;
using common::make_error;

namespace {

struct Pipe {
  common::UniqueFd read, write;
};

bool make_pipe(Pipe& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  p.read.reset(fds[0]);
  p.write.reset(fds[1]);
  return true;
}

asio::awaitable<void> drain(asio::posix::stream_descriptor& in, std::string& out, size_t max, bool& truncated) {
  char buf[16384];
  for (;;) {
    boost::system::error_code ec;
    size_t n = co_await in.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec || n == 0) co_return;
    size_t keep = out.size() < max ? std::min(n, max - out.size()) : 0;
    out.append(buf, keep);
    if (keep < n) truncated = true;
  }
}

}  // namespace

asio::awaitable<common::Result<ProcessOutcome>> run_process(ProcessRun run) {
  if (run.argv.empty()) co_return make_error(Errc::kBadRequest, "empty command");
  Pipe in, out, err;
  if (!make_pipe(in) || !make_pipe(out) || !make_pipe(err)) co_return make_error(Errc::kInternal, "pipe", errno);
  auto spawned = spawn_in_session(run.argv, run.env, run.cwd, {in.read.get(), out.write.get(), err.write.get()});
  if (!spawned) co_return spawned.error();
  const pid_t pid = *spawned;
  in.read.reset();
  out.write.reset();
  err.write.reset();

  auto ex = co_await asio::this_coro::executor;
  // Everything the concurrent readers and handlers touch lives in one shared block, so none of it can
  // dangle whatever order they finish in.
  struct Shared {
    std::string out, err;
    bool t_out = false, t_err = false, exited = false;
    int readers_done = 0;
    asio::posix::stream_descriptor out_d, err_d;
    asio::steady_timer timer;
    Shared(asio::any_io_executor e, int o, int r) : out_d(e, o), err_d(e, r), timer(e) {}
  };
  auto sh = std::make_shared<Shared>(ex, out.read.release(), err.read.release());
  const common::UniqueFd pidfd = open_pidfd(pid);
  ExitWatch exit_watch(ex, pidfd.get());
  asio::posix::stream_descriptor in_d(ex, in.write.release());
  ProcessOutcome result;
  asio::co_spawn(ex, drain(sh->out_d, sh->out, run.max_output, sh->t_out), [sh](std::exception_ptr) { ++sh->readers_done; });
  asio::co_spawn(ex, drain(sh->err_d, sh->err, run.max_output, sh->t_err), [sh](std::exception_ptr) { ++sh->readers_done; });
  boost::system::error_code ec;
  if (!run.stdin_data.empty())
    co_await asio::async_write(in_d, asio::buffer(run.stdin_data), asio::redirect_error(asio::use_awaitable, ec));
  in_d.close(ec);

  exit_watch.async_wait([sh] {
    sh->exited = true;
    sh->timer.cancel();
  });
  auto wait_for = [&](std::chrono::milliseconds d) -> asio::awaitable<void> {
    sh->timer.expires_after(d);
    boost::system::error_code wec;
    co_await sh->timer.async_wait(asio::redirect_error(asio::use_awaitable, wec));
  };
  if (!sh->exited) co_await wait_for(run.timeout);
  if (!sh->exited) {
    result.timed_out = true;
    ::kill(-pid, SIGTERM);
    ::kill(pid, SIGTERM);
    co_await wait_for(std::chrono::milliseconds(1000));
    if (!sh->exited) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      co_await wait_for(std::chrono::milliseconds(5000));
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  // Output still in the pipes is read before we answer; grandchildren holding them open are cut off.
  for (int i = 0; i < 50 && sh->readers_done < 2; ++i) co_await wait_for(std::chrono::milliseconds(10));
  sh->out_d.close(ec);
  sh->err_d.close(ec);
  for (int i = 0; i < 10 && sh->readers_done < 2; ++i) co_await wait_for(std::chrono::milliseconds(10));
  result.stdout_data = sh->out;
  result.stderr_data = sh->err;
  bool t1 = sh->t_out, t2 = sh->t_err;
  result.truncated = t1 || t2;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  co_return result;
}

}  // namespace cellgate::launcher
