// SPDX-License-Identifier: BSD-3-Clause
// fork_server: the zygote's unix socket — one request per connection, one forked jail helper each.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::zygote {

class ForkServer {
 public:
  // Binds `path` (0600; bound under a temporary name and renamed over it, so a zygote replacing
  // another one leaves no moment without a socket). The parent dir must exist.
  static common::Result<ForkServer> listen(const std::string& path);

  // runs in: the zygote's only thread. Serves until SIGTERM/SIGINT, or until the socket path is
  // taken over by another zygote; returns the exit code.
  int serve();

 private:
  ForkServer(std::string path, common::UniqueFd listener, ino_t inode);
  // One connection: read and check the request, fork the helper, answer with its pid and pidfd.
  void handle(int conn);
  void reap();
  bool still_ours() const;

  std::string path_;
  common::UniqueFd listener_;
  common::UniqueFd signals_;
  ino_t inode_ = 0;
};

}  // namespace cellgate::zygote
