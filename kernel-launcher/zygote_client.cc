// SPDX-License-Identifier: BSD-3-Clause
// zygote_client: one request to the cellgate-zygote fork server, awaited without blocking.
#include "kernel-launcher/zygote_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "isolation/zygote_protocol.h"

namespace cellgate::launcher {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using common::make_error;
using Clock = std::chrono::steady_clock;

namespace {

// A request that gave up may still be answered this long after: the server works through its
// connections in order, so a late answer comes once it gets to ours. Past this, the socket is closed
// (the server then finds a closed peer, and the helper's ready line nobody to read it).
constexpr auto kLateAnswerWait = std::chrono::minutes(5);

// The connection, shared by the request and, when the answer is late, by the wait for it.
struct Conn {
  Conn(const asio::any_io_executor& ex, int fd) : sock(ex, fd), timer(ex) {}
  asio::posix::stream_descriptor sock;
  asio::steady_timer timer;
  common::UniqueFd ready_r;
};

ZygoteOutcome failed(bool may_fall_back, std::string message, int err = 0) {
  return ZygoteOutcome{make_error(Errc::kUnavailable, std::move(message), err), may_fall_back};
}

// No writer left for the ready pipe: no helper got it, so none can be running for this request.
bool no_writer_left(int read_fd) {
  pollfd p{read_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) != 0 && (p.revents & POLLIN) == 0;
}

bool ready_now(int fd, short events) {
  pollfd p{fd, events, 0};
  int n;
  while ((n = ::poll(&p, 1, 0)) < 0 && errno == EINTR) {
  }
  return n != 0;  // an error or a hang-up counts: the next call reports it
}

// Until fd is ready for events (POLLIN or POLLOUT) or deadline; true when ready. Each completion is
// checked with poll(2): Asio 1.74's reactor can complete a wait with a stale event (exit_watch.h).
awaitable<bool> wait_until(std::shared_ptr<Conn> c, short events, Clock::time_point deadline) {
  for (;;) {
    if (ready_now(c->sock.native_handle(), events)) co_return true;
    if (Clock::now() >= deadline) co_return false;
    c->timer.expires_at(deadline);
    c->timer.async_wait([weak = std::weak_ptr<Conn>(c)](const boost::system::error_code& ec) {
      boost::system::error_code ignored;
      if (auto s = weak.lock(); s && !ec) s->sock.cancel(ignored);
    });
    boost::system::error_code ec;
    auto what = events == POLLIN ? asio::posix::stream_descriptor::wait_read : asio::posix::stream_descriptor::wait_write;
    co_await c->sock.async_wait(what, asio::redirect_error(asio::use_awaitable, ec));
    c->timer.cancel();
  }
}

struct Answer {
  isolation::ZygoteReply reply;
  common::UniqueFd pidfd;
  bool whole = false;  // a reply of the right size and magic
};

Answer read_answer(int sock) {
  Answer a;
  std::vector<common::UniqueFd> passed;  // the helper's pidfd first; any other is closed with the vector
  bool truncated = false;
  ssize_t got;
  while ((got = isolation::recv_with_fds(sock, &a.reply, sizeof a.reply, passed, 4, truncated)) < 0 && errno == EINTR) {
  }
  if (!passed.empty()) a.pidfd = std::move(passed.front());
  a.whole = got == static_cast<ssize_t>(sizeof a.reply) && a.reply.magic == isolation::ZygoteReply{}.magic;
  return a;
}

// The answer to a request that gave up: a helper it started is killed with its jail at once.
awaitable<void> kill_late_helper(std::shared_ptr<Conn> c, std::string name) {
  if (!co_await wait_until(c, POLLIN, Clock::now() + kLateAnswerWait)) {
    common::log_warn("jail={} msg=\"fork server never answered a request that timed out; closed\"", name);
    co_return;
  }
  Answer a = read_answer(c->sock.native_handle());
  if (!a.whole || a.reply.err != 0 || !a.pidfd) co_return;  // nothing was started
  // The helper handles SIGUSR1 by killing its jail's every process and removing its cgroup (or, still
  // before its setup, dies of it with nothing made yet); the server, its parent, reaps it.
  ::syscall(SYS_pidfd_send_signal, a.pidfd.get(), SIGUSR1, nullptr, 0);
  common::log_warn("jail={} helper={} msg=\"fork server answered after the start gave up; its jail is killed\"", name,
                   a.reply.pid);
}

}  // namespace

awaitable<ZygoteOutcome> zygote_spawn(const std::string& socket_path, const std::vector<std::string>& jail_args,
                                      const std::string& log_path, const std::string& status_file,
                                      std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) co_return failed(true, "fork server socket path too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  common::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) co_return failed(true, "socket", errno);
  // A unix socket connects at once or not at all: EAGAIN is a full backlog, not a connect in progress.
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    co_return failed(true, fmt::format("fork server at {}: {}", socket_path, std::strerror(errno)), errno);
  auto c = std::make_shared<Conn>(co_await asio::this_coro::executor, fd.release());

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) co_return failed(true, "pipe", errno);
  c->ready_r.reset(pipefd[0]);
  common::UniqueFd ready_w(pipefd[1]);
  common::UniqueFd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  common::UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!in || !log) co_return failed(true, "open " + log_path, errno);

  const std::string payload = isolation::encode_zygote_request(jail_args);
  if (payload.size() > isolation::kZygoteMaxRequest) co_return failed(true, "fork server request too big");
  const int fds[isolation::kZygoteRequestFds] = {in.get(), log.get(), ready_w.get()};
  ssize_t sent;
  for (;;) {
    sent = isolation::send_with_fds(c->sock.native_handle(), payload.data(), payload.size(), fds,
                                    isolation::kZygoteRequestFds);
    if (sent >= 0 || (errno != EAGAIN && errno != EINTR)) break;
    // Nothing of a message that did not fit was sent: falling back stays safe until it is.
    if (!co_await wait_until(c, POLLOUT, deadline))
      co_return failed(true, fmt::format("fork server took no request within {} ms", timeout.count()));
  }
  if (sent != static_cast<ssize_t>(payload.size())) co_return failed(true, "fork server: send", errno);
  // Only the server's copy (or the helper's) may keep the pipe open from now on.
  ready_w.reset();
  in.reset();
  log.reset();

  if (!co_await wait_until(c, POLLIN, deadline)) {
    std::string name = jail_args.size() > 1 && jail_args[0] == "--name" ? jail_args[1] : std::string("?");
    asio::co_spawn(c->sock.get_executor(), kill_late_helper(c, name), asio::detached);
    co_return failed(false, fmt::format("the fork server did not answer within {} ms", timeout.count()));
  }
  Answer a = read_answer(c->sock.native_handle());
  if (!a.whole) co_return failed(no_writer_left(c->ready_r.get()), "fork server closed without an answer");
  if (a.reply.err != 0)
    co_return failed(true, fmt::format("fork server: {}", std::strerror(a.reply.err)), a.reply.err);  // it did not fork
  if (!a.pidfd || a.reply.pid <= 0) co_return failed(false, "fork server answered without a pidfd");
  ProcessHandle h;
  h.pid = a.reply.pid;
  h.pidfd = std::move(a.pidfd);
  h.ready_fd = std::move(c->ready_r);
  h.status_file = status_file;
  h.is_child = false;  // the zygote's child: it reaps the helper, we watch the pidfd
  co_return ZygoteOutcome{std::move(h), false};
}

}  // namespace cellgate::launcher
