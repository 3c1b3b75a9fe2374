// SPDX-License-Identifier: BSD-3-Clause
// zygote_protocol: the fork server's wire format.
#include "isolation/zygote_protocol.h"

#include <sys/socket.h>

#include <cstring>

#include "common/assert.h"

namespace cellgate::isolation {

using common::Errc;
using common::make_error;

ssize_t send_with_fds(int sock, const void* data, size_t len, const int* fds, size_t nfds) {
  CELLGATE_ASSERT(nfds <= kMaxPassedFds);
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  if (nfds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  return ::sendmsg(sock, &msg, MSG_NOSIGNAL);
}

ssize_t recv_with_fds(int sock, void* data, size_t len, std::vector<common::UniqueFd>& fds, size_t max_fds,
                      bool& truncated) {
  CELLGATE_ASSERT(max_fds <= kMaxPassedFds);
  iovec iov{data, len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * max_fds);
  const ssize_t got = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  for (cmsghdr* c = got > 0 ? CMSG_FIRSTHDR(&msg) : nullptr; c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.emplace_back(fd);
    }
  }
  truncated = got > 0 && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
  return got;
}

std::string encode_zygote_request(const std::vector<std::string>& jail_args) {
  std::string out(kZygoteMagic);
  for (const auto& a : jail_args) {
    out += a;
    out.push_back('\0');
  }
  return out;
}

common::Result<std::vector<std::string>> decode_zygote_request(std::string_view bytes) {
  if (bytes.size() > kZygoteMaxRequest) return make_error(Errc::kBadRequest, "zygote request too big");
  if (!bytes.starts_with(kZygoteMagic)) return make_error(Errc::kBadRequest, "not a zygote request");
  bytes.remove_prefix(kZygoteMagic.size());
  std::vector<std::string> args;
  while (!bytes.empty()) {
    size_t end = bytes.find('\0');
    if (end == std::string_view::npos) return make_error(Errc::kBadRequest, "zygote request: unterminated argument");
    args.emplace_back(bytes.substr(0, end));
    bytes.remove_prefix(end + 1);
  }
  if (args.empty()) return make_error(Errc::kBadRequest, "zygote request: no arguments");
  return args;
}

bool zygote_can_run(const std::vector<std::string>& command) {
  return command.size() == 5 && command[0] == "/usr/bin/python3" && command[1] == "-m" &&
         command[2] == "ipykernel_launcher" && command[3] == "-f" && command[4].starts_with('/');
}

}  // namespace cellgate::isolation
