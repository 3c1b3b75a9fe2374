// SPDX-License-Identifier: BSD-3-Clause
// ipc_dir: keeps xeus 2.4.1's ipc endpoints short by binding them relative to their directory.
#pragma once

#include <string>

#include <xeus/xkernel_configuration.hpp>

namespace cellgate::xpython {

// xeus 2.4.1 reads each socket's ZMQ_LAST_ENDPOINT into a 32-byte buffer (xmiddleware.cpp,
// get_socket_port) while building the kernel, so an ipc endpoint "ipc://<ip>-<port>" of 32 bytes or
// more fails with EINVAL ("Invalid argument") right after binding. The gateway's ipc paths
// (<runtime>/k/<kernel uuid>/k) are ~60 bytes. While alive, this changes the working directory to
// dirname(ip) and sets config.m_ip to basename(ip), so the sockets bind as "ipc://k-1" (the same
// files); the destructor restores the working directory. Construct the xeus kernel (which binds)
// inside its lifetime. Does nothing for tcp or already-short endpoints. Main thread, before any
// other thread depends on the cwd. Throws std::runtime_error if the directory cannot be entered or
// the shortened endpoint is still too long.
class ScopedIpcDir {
 public:
  explicit ScopedIpcDir(xeus::xconfiguration& config);
  ~ScopedIpcDir();
  ScopedIpcDir(const ScopedIpcDir&) = delete;
  ScopedIpcDir& operator=(const ScopedIpcDir&) = delete;

 private:
  int saved_cwd_ = -1;  // O_PATH fd of the previous working directory, or -1 when nothing changed
};

}  // namespace cellgate::xpython
