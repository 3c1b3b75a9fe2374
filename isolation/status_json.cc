// SPDX-License-Identifier: BSD-3-Clause
// status_json: the status file and ready-fd JSON documents (a tiny writer, no JSON library).
#include "isolation/status_json.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "common/fd_io.h"
#include "common/random.h"

namespace cellgate::isolation {
namespace {

std::string opt_int(std::optional<int> v) { return v ? std::to_string(*v) : "null"; }

}  // namespace

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string running_json(pid_t helper_pid, pid_t init_pid, pid_t kernel_pid, uint64_t host_uid,
                         const std::string& cgroup, int egress_fd) {
  return "{\"state\":\"running\",\"helper_pid\":" + std::to_string(helper_pid) +
         ",\"init_pid\":" + std::to_string(init_pid) + ",\"kernel_pid\":" + std::to_string(kernel_pid) +
         ",\"host_uid\":" + std::to_string(host_uid) + ",\"cgroup\":" + json_string(cgroup) +
         (egress_fd >= 0 ? ",\"egress_fd\":" + std::to_string(egress_fd) : std::string()) + "}";
}

std::string failed_json(const std::string& stage, int err, const std::string& message) {
  return "{\"state\":\"failed\",\"stage\":" + json_string(stage) + ",\"errno\":" + std::to_string(err) +
         ",\"message\":" + json_string(message) + "}";
}

std::string exited_json(std::optional<int> exit_code, std::optional<int> signal, const std::string& reason) {
  return "{\"state\":\"exited\",\"exit_code\":" + opt_int(exit_code) + ",\"signal\":" + opt_int(signal) +
         ",\"reason\":" + json_string(reason) + "}";
}

bool write_status_file(const std::string& path, const std::string& json) {
  if (path.empty()) return true;
  // In case the directory is one the kernel can write to: an unpredictable temp name, and O_EXCL
  // so we never open something planted there (a FIFO would block us, a symlink redirect us).
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 3 && fd < 0; ++attempt) {
    tmp = path + ".tmp." + common::random_hex(8);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno != EEXIST) return false;
  }
  if (fd < 0) return false;
  bool ok = common::write_all(fd, json + "\n") == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) < 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

void write_ready_line(int fd, const std::string& json) {
  if (fd < 0) return;
  (void)common::write_all(fd, json + "\n");
  ::close(fd);
}

}  // namespace cellgate::isolation
