// SPDX-License-Identifier: BSD-3-Clause
// zygote_protocol: the fork server's wire format (kernels/zygote serves it, kernel-launcher asks).
//
// One request per connection on a SOCK_SEQPACKET unix socket (root only, 0600):
//   request: "CGZ1\0" then cellgate-jail's argv without argv[0], each string NUL-terminated, in one
//            message, with SCM_RIGHTS carrying exactly 3 fds: stdin, stdout+stderr (the log), and
//            the ready pipe's write end (the helper's fd 3: pass `--ready-fd 3`).
//   reply:   one ZygoteReply; on success with SCM_RIGHTS carrying the helper's pidfd.
// The helper is then an ordinary cellgate-jail (same status file, signals and exit codes).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::isolation {

inline constexpr std::string_view kZygoteMagic{"CGZ1\0", 5};
inline constexpr size_t kZygoteMaxRequest = 256 * 1024;
inline constexpr int kZygoteRequestFds = 3;

struct ZygoteReply {
  uint32_t magic = 0x315a4743;  // "CGZ1"
  int32_t err = 0;              // 0, or the errno of why no helper was started
  int32_t pid = -1;             // the helper's pid (in the server's pid namespace)
  uint32_t reserved = 0;
};
static_assert(sizeof(ZygoteReply) == 16);

std::string encode_zygote_request(const std::vector<std::string>& jail_args);
// Errors (kBadRequest): wrong magic, too big, an unterminated string, no argument.
common::Result<std::vector<std::string>> decode_zygote_request(std::string_view bytes);

// The most fds one message may carry (the request's 3, a reply's 1, with room for a peer's extras).
inline constexpr size_t kMaxPassedFds = 8;
// Sends data as one message with fds attached (SCM_RIGHTS; none when nfds is 0; nfds <= kMaxPassedFds).
// Returns what sendmsg(2) returns; MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE.
ssize_t send_with_fds(int sock, const void* data, size_t len, const int* fds, size_t nfds);
// Receives one message without waiting into data (at most len bytes), appending the fds that came
// with it (close-on-exec, in order) to fds, at most max_fds (<= kMaxPassedFds): the kernel closes
// any beyond. truncated: the message or its fds did not fit. Returns what recvmsg(2) returns.
ssize_t recv_with_fds(int sock, void* data, size_t len, std::vector<common::UniqueFd>& fds, size_t max_fds,
                      bool& truncated);

// True when `command` (what follows `--` in the jail argv) is what the fork server can run:
// /usr/bin/python3 -m ipykernel_launcher -f FILE (the Debian python3 kernelspec), in that exact shape.
bool zygote_can_run(const std::vector<std::string>& command);

}  // namespace cellgate::isolation
