// SPDX-License-Identifier: BSD-3-Clause
// zygote_client: one request to the cellgate-zygote fork server (isolation/zygote_protocol.h).
#include "kernel-launcher/zygote_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "isolation/zygote_protocol.h"

namespace cellgate::launcher {

using common::Errc;
using common::make_error;

namespace {

ZygoteOutcome failed(bool may_fall_back, std::string message, int err = 0) {
  return ZygoteOutcome{make_error(Errc::kUnavailable, std::move(message), err), may_fall_back};
}

// No writer left for the ready pipe: no helper got it, so none can be running for this request.
bool no_writer_left(int read_fd) {
  pollfd p{read_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) != 0 && (p.revents & POLLIN) == 0;
}

}  // namespace

ZygoteOutcome zygote_spawn(const std::string& socket_path, const std::vector<std::string>& jail_args,
                           const std::string& log_path, const std::string& status_file,
                           std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return failed(true, "fork server socket path too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  common::UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return failed(true, "socket", errno);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    return failed(true, fmt::format("fork server at {}: {}", socket_path, std::strerror(errno)), errno);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return failed(true, "pipe", errno);
  common::UniqueFd ready_r(pipefd[0]), ready_w(pipefd[1]);
  common::UniqueFd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  common::UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!in || !log) return failed(true, "open " + log_path, errno);

  const std::string payload = isolation::encode_zygote_request(jail_args);
  if (payload.size() > isolation::kZygoteMaxRequest) return failed(true, "fork server request too big");
  const int fds[isolation::kZygoteRequestFds] = {in.get(), log.get(), ready_w.get()};
  if (isolation::send_with_fds(sock.get(), payload.data(), payload.size(), fds, isolation::kZygoteRequestFds) !=
      static_cast<ssize_t>(payload.size()))
    return failed(true, "fork server: send", errno);
  // Only the server's copy (or the helper's) may keep the pipe open from now on.
  ready_w.reset();
  in.reset();
  log.reset();

  pollfd p{sock.get(), POLLIN, 0};
  int n;
  while ((n = ::poll(&p, 1, static_cast<int>(timeout.count()))) < 0 && errno == EINTR) {
  }
  if (n == 0) return failed(false, fmt::format("fork server did not answer within {} ms", timeout.count()));
  isolation::ZygoteReply reply;
  std::vector<common::UniqueFd> passed;  // the helper's pidfd first; any other is closed with the vector
  bool truncated = false;
  ssize_t got = isolation::recv_with_fds(sock.get(), &reply, sizeof reply, passed, 4, truncated);
  common::UniqueFd pidfd;
  if (!passed.empty()) pidfd = std::move(passed.front());
  if (got != static_cast<ssize_t>(sizeof reply) || reply.magic != isolation::ZygoteReply{}.magic)
    return failed(no_writer_left(ready_r.get()), "fork server closed without an answer");
  if (reply.err != 0)
    return failed(true, fmt::format("fork server: {}", std::strerror(reply.err)), reply.err);  // it did not fork
  if (!pidfd || reply.pid <= 0) return failed(false, "fork server answered without a pidfd");
  ProcessHandle h;
  h.pid = reply.pid;
  h.pidfd = std::move(pidfd);
  h.ready_fd = std::move(ready_r);
  h.status_file = status_file;
  h.is_child = false;  // the zygote's child: it reaps the helper, we watch the pidfd
  return ZygoteOutcome{std::move(h), false};
}

}  // namespace cellgate::launcher
