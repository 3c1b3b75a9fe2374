// SPDX-License-Identifier: BSD-3-Clause
// egress_attach: the helper's half of handing a jail's proxy endpoint to cellgate-egress.
#include "isolation/egress_attach.h"

#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "isolation/join_target.h"

namespace cellgate::isolation {

using common::Errc;
using common::make_error;

common::Result<common::UniqueFd> announce_to_egress(const std::string& socket_path, const std::string& name,
                                                    std::chrono::milliseconds timeout) {
  common::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return make_error(Errc::kInternal, std::string("egress: socket: ") + std::strerror(errno), errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return make_error(Errc::kBadRequest, "egress: socket path too long");
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    return make_error(Errc::kUnavailable, "egress: connect " + socket_path + ": " + std::strerror(errno), errno);
  const std::string request = nlohmann::json{{"op", "attach"}, {"kernel", name}}.dump() + "\n";
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return make_error(Errc::kUnavailable, std::string("egress: send: ") + std::strerror(errno), errno);
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (answer.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd.get(), POLLIN, 0};
    int r = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return make_error(Errc::kTimeout, "egress: no answer from " + socket_path, ETIMEDOUT);
    char buf[1024];
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) return make_error(Errc::kUnavailable, "egress: " + socket_path + " closed the connection", ECONNRESET);
    answer.append(buf, static_cast<size_t>(n));
    if (answer.size() > 16384) return make_error(Errc::kUnavailable, "egress: answer too long", EPROTO);
  }
  auto j = nlohmann::json::parse(answer.substr(0, answer.find('\n')), nullptr, false);
  if (!j.is_object() || !j.value("ok", false)) {
    std::string why = j.is_object() && j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : "refused";
    return make_error(Errc::kBadRequest, "egress: " + why, EPERM);
  }
  return fd;
}

namespace {

int attach_failed(const std::string& what, int err = 0) {
  std::fprintf(stderr, "cellgate-jail: egress-attach: %s%s%s\n", what.c_str(), err ? ": " : "",
               err ? std::strerror(err) : "");
  return 126;
}

int int_option(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  return ::getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}

// The listener's network namespace is the init's (SIOCGSKNS: sock(7)), so what is handed over is
// the jail's own endpoint and nothing else the init might hold at that number.
bool jail_listener(int fd, pid_t init) {
  if (int_option(fd, SOL_SOCKET, SO_ACCEPTCONN) != 1 || int_option(fd, SOL_SOCKET, SO_TYPE) != SOCK_STREAM ||
      int_option(fd, SOL_SOCKET, SO_DOMAIN) != AF_INET)
    return false;
  common::UniqueFd ns(::ioctl(fd, SIOCGSKNS));
  struct stat sock_ns {}, init_ns {};
  return ns && ::fstat(ns.get(), &sock_ns) == 0 &&
         ::stat(("/proc/" + std::to_string(init) + "/ns/net").c_str(), &init_ns) == 0 &&
         sock_ns.st_ino == init_ns.st_ino && sock_ns.st_dev == init_ns.st_dev;
}

}  // namespace

int reattach_egress(const std::string& status_file, const std::string& socket_path, const std::string& name) {
  auto target = open_join_target(status_file);
  if (!target) return attach_failed(target.error().message);
  std::ifstream in(status_file);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (!doc.is_object() || !doc.contains("egress_fd") || !doc["egress_fd"].is_number_unsigned())
    return attach_failed("the jail has no egress endpoint (no egress_fd in its status)");
  const int number = doc["egress_fd"].get<int>();
  common::UniqueFd listener(static_cast<int>(::syscall(SYS_pidfd_getfd, target->init_pidfd.get(), number, 0)));
  if (!listener) return attach_failed("take the init's fd " + std::to_string(number), errno);
  if (!jail_listener(listener.get(), target->status.init_pid))
    return attach_failed("fd " + std::to_string(number) + " of the init is not the jail's listening socket");
  auto egress = announce_to_egress(socket_path, name, std::chrono::seconds(10));
  if (!egress) return attach_failed(egress.error().message);
  int fds[2] = {listener.get(), target->init_pidfd.get()};
  char byte = 'L';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  if (::sendmsg(egress->get(), &msg, MSG_NOSIGNAL) != 1) return attach_failed("send to the proxy", errno);
  return 0;
}

}  // namespace cellgate::isolation
