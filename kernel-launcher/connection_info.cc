// SPDX-License-Identifier: BSD-3-Clause
// connection_info: a kernel's connection file.
#include "kernel-launcher/connection_info.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "common/random.h"
#include "common/unique_fd.h"

namespace cellgate::launcher {
namespace {
using common::Errc;
using common::make_error;
constexpr size_t kMaxSunPath = 107;
}  // namespace

std::string ConnectionInfo::endpoint(Channel c) const {
  int port = ports[static_cast<size_t>(c)];
  if (transport == "ipc") return fmt::format("ipc://{}-{}", ip, port);
  return fmt::format("tcp://{}:{}", ip, port);
}

nlohmann::json ConnectionInfo::to_json() const {
  return nlohmann::json{{"transport", transport},
                        {"ip", ip},
                        {"shell_port", ports[0]},
                        {"iopub_port", ports[1]},
                        {"stdin_port", ports[2]},
                        {"control_port", ports[3]},
                        {"hb_port", ports[4]},
                        {"key", key},
                        {"signature_scheme", signature_scheme},
                        {"kernel_name", kernel_name}};
}

common::Result<ConnectionInfo> make_ipc_connection(const std::string& dir, const std::string& kernel_name) {
  ConnectionInfo info;
  info.transport = "ipc";
  info.ip = dir + "/k";
  if (info.ip.size() + 2 > kMaxSunPath)
    return make_error(Errc::kBadRequest, fmt::format("ipc socket path {}-N is longer than {} bytes; use a shorter "
                                                     "runtime dir", info.ip, kMaxSunPath));
  info.key = common::random_hex(32);
  info.kernel_name = kernel_name;
  return info;
}

common::Result<ConnectionInfo> make_tcp_connection(const std::string& ip, const std::string& kernel_name) {
  ConnectionInfo info;
  info.transport = "tcp";
  info.ip = ip;
  info.key = common::random_hex(32);
  info.kernel_name = kernel_name;
  common::UniqueFd socks[5];
  for (size_t i = 0; i < 5; ++i) {
    socks[i].reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!socks[i]) return make_error(Errc::kInternal, "socket", errno);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1)
      return make_error(Errc::kBadRequest, "tcp transport needs an IPv4 address, got " + ip);
    socklen_t len = sizeof addr;
    if (::bind(socks[i].get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::getsockname(socks[i].get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return make_error(Errc::kInternal, "bind " + ip, errno);
    info.ports[i] = ntohs(addr.sin_port);
  }
  return info;
}

common::Status write_connection_file(const ConnectionInfo& info, const std::string& path) {
  const std::string tmp = path + ".tmp";
  const std::string text = info.to_json().dump(1);
  common::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return make_error(Errc::kInternal, "create " + tmp, errno);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return make_error(Errc::kInternal, "write " + tmp, errno);
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) return make_error(Errc::kInternal, "rename " + path, errno);
  return common::ok();
}

}  // namespace cellgate::launcher
