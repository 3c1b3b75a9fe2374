// SPDX-License-Identifier: BSD-3-Clause
// egress_attach: the helper's half of handing a jail's proxy endpoint to cellgate-egress.
#include "isolation/egress_attach.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

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

}  // namespace cellgate::isolation
