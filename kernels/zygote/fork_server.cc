// SPDX-License-Identifier: BSD-3-Clause
// fork_server: the zygote's unix socket — one request per connection, one forked jail helper each.
#include "kernels/zygote/fork_server.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "isolation/zygote_protocol.h"
#include "kernels/zygote/helper_child.h"
#include "kernels/zygote/python_image.h"

namespace cellgate::zygote {

using common::Errc;
using common::make_error;

namespace {

constexpr int kCheckIntervalMs = 2000;  // how often we look whether another zygote took our path
constexpr int kRequestTimeoutMs = 2000; // a client that connects and says nothing is dropped

void log_line(const char* what, const std::string& detail, int err = 0) {
  std::fprintf(stderr, "cellgate-zygote: %s%s%s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str(),
               err ? ": " : "", err ? std::strerror(err) : "");
}

void send_reply(int conn, int err, pid_t pid, int pidfd) {
  isolation::ZygoteReply reply;
  reply.err = err;
  reply.pid = pid;
  (void)isolation::send_with_fds(conn, &reply, sizeof reply, &pidfd, pidfd >= 0 ? 1 : 0);
}

// The request's buffer: a fresh anonymous mapping per request, unmapped after the fork. In the heap
// (a 256 KiB vector, zeroed when made and wiped after the fork) every request rewrote ~64 heap pages
// that the previous helper, its init and its kernel still shared with us, so each jail kept its own
// copy of them (0.25 MiB per kernel). Here only the pages the request fills are ever touched.
class RequestBuffer {
 public:
  RequestBuffer()
      : data_(static_cast<char*>(::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {
    if (data_ == MAP_FAILED) data_ = nullptr;
  }
  ~RequestBuffer() {
    if (data_ != nullptr) ::munmap(data_, kSize);
  }
  RequestBuffer(const RequestBuffer&) = delete;
  RequestBuffer& operator=(const RequestBuffer&) = delete;
  char* data() const { return data_; }
  static constexpr size_t size() { return kSize; }

 private:
  static constexpr size_t kSize = isolation::kZygoteMaxRequest + 1;
  char* data_;
};

}  // namespace

ForkServer::ForkServer(std::string path, common::UniqueFd listener, ino_t inode)
    : path_(std::move(path)), listener_(std::move(listener)), inode_(inode) {}

common::Result<ForkServer> ForkServer::listen(const std::string& path) {
  const std::string tmp = path + ".new." + std::to_string(::getpid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (tmp.size() >= sizeof addr.sun_path) return make_error(Errc::kBadRequest, "socket path too long: " + path);
  std::memcpy(addr.sun_path, tmp.c_str(), tmp.size() + 1);
  common::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return make_error(Errc::kInternal, "socket", errno);
  ::unlink(tmp.c_str());
  // Only root may connect: the mode is set before the name is visible under `path`.
  mode_t old = ::umask(077);
  int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc < 0) return make_error(Errc::kInternal, "bind " + tmp, errno);
  if (::chmod(tmp.c_str(), 0600) < 0 || ::listen(fd.get(), 128) < 0 || ::rename(tmp.c_str(), path.c_str()) < 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return make_error(Errc::kInternal, "listen " + path, err);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) < 0) return make_error(Errc::kInternal, "stat " + path, errno);
  return ForkServer(path, std::move(fd), st.st_ino);
}

bool ForkServer::still_ours() const {
  struct stat st {};
  return ::stat(path_.c_str(), &st) == 0 && st.st_ino == inode_;
}

void ForkServer::reap() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

int ForkServer::serve() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  signals_.reset(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals_) {
    log_line("signalfd", "", errno);
    return 1;
  }
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {signals_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, kCheckIntervalMs);
    if (n < 0 && errno != EINTR) return 1;
    if (!still_ours()) {
      log_line("socket taken over by another zygote; exiting", path_);
      return 0;
    }
    if (n > 0 && (fds[1].revents & POLLIN) != 0) {
      signalfd_siginfo si{};
      while (::read(signals_.get(), &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD) continue;
        ::unlink(path_.c_str());
        return 0;
      }
      reap();
    }
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
      common::UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (conn) handle(conn.get());
    }
  }
}

void ForkServer::handle(int conn) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 || (peer.uid != 0 && peer.uid != ::geteuid())) {
    log_line("refused a connection from uid", std::to_string(peer.uid));
    return;
  }
  pollfd p{conn, POLLIN, 0};
  if (::poll(&p, 1, kRequestTimeoutMs) != 1) return;
  RequestBuffer buf;
  if (buf.data() == nullptr) return log_line("mmap", "request buffer", errno);
  std::vector<common::UniqueFd> fds;
  bool truncated = false;
  ssize_t got = isolation::recv_with_fds(conn, buf.data(), buf.size(), fds, isolation::kMaxPassedFds, truncated);
  if (got <= 0) return;
  if (truncated || fds.size() != isolation::kZygoteRequestFds) {
    log_line("bad request", "truncated, or not exactly 3 fds");
    return send_reply(conn, EINVAL, -1, -1);
  }
  // Only the framing is checked here. The request's content (a tenant's environment among it) is
  // decoded in the child and wiped from our memory right after the fork: every later kernel starts as
  // a copy of this process, and must not find another kernel's request in it.
  std::string_view bytes(buf.data(), static_cast<size_t>(got));
  if (!bytes.starts_with(isolation::kZygoteMagic)) {
    ::explicit_bzero(buf.data(), static_cast<size_t>(got));
    log_line("bad request", "not a zygote request");
    return send_reply(conn, EINVAL, -1, -1);
  }
  const int raw[3] = {fds[0].get(), fds[1].get(), fds[2].get()};
  before_fork();
  pid_t pid = ::fork();
  if (pid == 0) run_helper(bytes, raw);
  int fork_err = errno;
  ::explicit_bzero(buf.data(), static_cast<size_t>(got));
  if (pid < 0) {
    log_line("fork", "", fork_err);
    return send_reply(conn, fork_err, -1, -1);
  }
  common::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  send_reply(conn, 0, pid, pidfd.get());
}

}  // namespace cellgate::zygote
