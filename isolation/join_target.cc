// SPDX-License-Identifier: BSD-3-Clause
// join_target: parse the status file, then prove its init_pid is that jail's init.
#include "isolation/join_target.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

namespace cellgate::isolation {
namespace {

using common::Errc;
using common::make_error;
using nlohmann::json;

constexpr size_t kMaxStatusBytes = 64 * 1024;

common::Error refuse(const std::string& message, int err = 0) { return make_error(Errc::kForbidden, message, err); }

// Reads at most `limit` bytes; false on an error or when the file is larger.
bool read_bounded(int fd, std::string& out, size_t limit) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > limit) return false;
  }
}

bool read_proc(const std::string& path, std::string& out) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  return fd && read_bounded(fd.get(), out, kMaxStatusBytes);
}

// The whitespace-separated numbers after "<key>:" on its line of /proc/<pid>/status.
std::vector<uint64_t> status_numbers(std::string_view text, std::string_view key) {
  std::vector<uint64_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      uint64_t v = 0;
      bool digits = false;
      for (char c : line.substr(key.size() + 1)) {
        if (c >= '0' && c <= '9') {
          v = v * 10 + static_cast<uint64_t>(c - '0');
          digits = true;
        } else if (digits) {
          out.push_back(v);
          v = 0;
          digits = false;
        }
      }
      if (digits) out.push_back(v);
      return out;
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return out;
}

bool same_inode(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// The program name of /proc/<pid>/exe ("cellgate-jail"), without " (deleted)": an upgraded
// binary keeps its name, so jails started before an upgrade stay joinable.
std::string exe_name(const std::string& pid) {
  char buf[4096];
  ssize_t n = ::readlink(("/proc/" + pid + "/exe").c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

common::Result<JoinStatus> parse_join_status(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return refuse("status file is not a JSON object");
  auto state = doc.find("state");
  if (state == doc.end() || !state->is_string() || *state != "running")
    return refuse("the jail is not running (status state is not \"running\")");
  JoinStatus s;
  auto pid_field = [&](const char* key, pid_t& out) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_number_unsigned()) return false;
    uint64_t v = it->get<uint64_t>();
    if (v < 2 || v > 4194304) return false;  // pid_max limit; 1 is never a jail's helper or init
    out = static_cast<pid_t>(v);
    return true;
  };
  if (!pid_field("helper_pid", s.helper_pid) || !pid_field("init_pid", s.init_pid) || s.helper_pid == s.init_pid)
    return refuse("status file has no valid helper_pid/init_pid");
  auto uid = doc.find("host_uid");
  if (uid == doc.end() || !uid->is_number_unsigned() || uid->get<uint64_t>() == 0 || uid->get<uint64_t>() >= 0xFFFFFFFFULL)
    return refuse("status file has no valid host_uid");
  s.host_uid = uid->get<uint64_t>();
  auto cg = doc.find("cgroup");
  if (cg != doc.end() && !cg->is_string()) return refuse("status file cgroup is not a string");
  if (cg != doc.end()) s.cgroup = cg->get<std::string>();
  return s;
}

common::Status check_init_status(std::string_view proc_status, const JoinStatus& status) {
  const std::string pid = std::to_string(status.init_pid);
  auto ppid = status_numbers(proc_status, "PPid");
  if (ppid.size() != 1 || ppid[0] != static_cast<uint64_t>(status.helper_pid))
    return refuse("pid " + pid + " is not that jail's init (its parent is not helper " +
                  std::to_string(status.helper_pid) + ")");
  auto nspid = status_numbers(proc_status, "NSpid");
  if (nspid.size() < 2 || nspid.back() != 1)
    return refuse("pid " + pid + " is not that jail's init (not pid 1 of a nested pid namespace)");
  auto uids = status_numbers(proc_status, "Uid");
  if (uids.size() != 4) return refuse("pid " + pid + " has no Uid line");
  for (uint64_t u : uids) {
    if (u != status.host_uid) return refuse("pid " + pid + " is not that jail's init (uid " + std::to_string(u) + ")");
  }
  return common::ok();
}

common::Result<JoinTarget> open_join_target(const std::string& status_file) {
  // O_NONBLOCK: a FIFO planted at the path must not block us; only a regular file is read.
  common::UniqueFd fd(::open(status_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return refuse("status file " + status_file + ": " + std::strerror(errno), errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode)) return refuse("status file " + status_file + " is not a regular file");
  std::string text;
  if (!read_bounded(fd.get(), text, kMaxStatusBytes)) return refuse("status file " + status_file + " is unreadable or too large");
  auto status = parse_join_status(text);
  if (!status) return status.error();

  JoinTarget t;
  t.status = status.value();
  const std::string pid = std::to_string(t.status.init_pid);
  t.init_pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, t.status.init_pid, 0)));
  if (!t.init_pidfd) return refuse("jail init " + pid + ": " + std::strerror(errno), errno);
  // Everything below reads /proc/<pid>; the pidfd pins the process we mean, and the final
  // liveness check proves /proc/<pid> was that process while we read it.
  const std::string proc = "/proc/" + pid;
  std::string proc_status;
  if (!read_proc(proc + "/status", proc_status)) return refuse("jail init " + pid + ": cannot read its status", errno);
  if (auto s = check_init_status(proc_status, t.status); !s) return s.error();
  // The init's parent must be a cellgate-jail helper: a program of our name, or a helper forked by the
  // cellgate-zygote fork server, which runs the same jail code (isolation::jail_main).
  const std::string helper_exe = exe_name(std::to_string(t.status.helper_pid));
  if (helper_exe.empty() || (helper_exe != exe_name("self") && helper_exe != "cellgate-zygote"))
    return refuse("jail init " + pid + ": its parent " + std::to_string(t.status.helper_pid) + " is not cellgate-jail");
  for (const char* ns : {"user", "pid", "mnt", "net"}) {
    if (same_inode(proc + "/ns/" + ns, std::string("/proc/self/ns/") + ns))
      return refuse("jail init " + pid + " shares our " + ns + " namespace: not a jail");
  }
  if (::syscall(SYS_pidfd_send_signal, t.init_pidfd.get(), 0, nullptr, 0) < 0)
    return refuse("jail init " + pid + " exited while we checked it", errno);
  return t;
}

}  // namespace cellgate::isolation
