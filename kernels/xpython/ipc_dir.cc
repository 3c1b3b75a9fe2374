// SPDX-License-Identifier: BSD-3-Clause
// ipc_dir: keeps xeus 2.4.1's ipc endpoints short by binding them relative to their directory.
#include "kernels/xpython/ipc_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cellgate::xpython {

namespace {

// xeus' buffer is char[32] and zmq counts the terminating NUL; ports have up to 5 digits.
constexpr size_t kMaxEndpoint = 31;

size_t endpoint_length(const std::string& ip) { return std::strlen("ipc://") + ip.size() + std::strlen("-65535"); }

}  // namespace

ScopedIpcDir::ScopedIpcDir(xeus::xconfiguration& config) {
  if (config.m_transport != "ipc" || endpoint_length(config.m_ip) <= kMaxEndpoint) return;
  const size_t slash = config.m_ip.rfind('/');
  if (slash == std::string::npos)
    throw std::runtime_error("ipc name \"" + config.m_ip + "\" is too long for xeus 2.4.1 (31-byte endpoints)");
  const std::string dir = slash == 0 ? "/" : config.m_ip.substr(0, slash);
  const std::string base = config.m_ip.substr(slash + 1);
  if (endpoint_length(base) > kMaxEndpoint)
    throw std::runtime_error("ipc name \"" + base + "\" is too long for xeus 2.4.1 (31-byte endpoints)");
  saved_cwd_ = ::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (saved_cwd_ < 0) throw std::runtime_error(std::string("open cwd: ") + std::strerror(errno));
  if (::chdir(dir.c_str()) != 0) {
    const int err = errno;
    ::close(saved_cwd_);
    throw std::runtime_error("chdir " + dir + ": " + std::strerror(err));
  }
  config.m_ip = base;
}

ScopedIpcDir::~ScopedIpcDir() {
  if (saved_cwd_ < 0) return;
  // Best effort: a failure leaves the kernel in the ipc dir, which is writable and harmless.
  [[maybe_unused]] const int rc = ::fchdir(saved_cwd_);
  ::close(saved_cwd_);
}

}  // namespace cellgate::xpython
