// SPDX-License-Identifier: BSD-3-Clause
// test_util: temp dirs, file helpers and a fork-with-deadline runner for workspace tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

#include "workspace/io_util.h"

namespace cellgate::workspace::test {

// A fresh directory under base (default /tmp), removed (recursively, never following symlinks) at scope end.
class TempDir {
 public:
  explicit TempDir(const std::string& base = "/tmp") {
    std::string tmpl = base + "/cellgate-ws-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp in " + base);
    path_ = tmpl;
  }
  ~TempDir() { (void)remove_tree_at(AT_FDCWD, path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_text(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path);
  if (!write_all(fd, data.data(), data.size())) throw std::runtime_error("write " + path);
  ::close(fd);
}

inline std::string read_text(const std::string& path) {
  auto r = read_file_at(AT_FDCWD, path, 1 << 30);
  if (!r) throw std::runtime_error("read " + path + ": " + r.error().message);
  return *r;
}

inline bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

inline ino_t inode_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) throw std::runtime_error("lstat " + path);
  return st.st_ino;
}

// Coarse-clock timestamps within ~50 ms of a scan are deliberately not cached (racy-git rule);
// tests that count re-hashes let the clock move past that window first.
inline void settle() {
  timespec ts{0, 120'000'000};
  ::nanosleep(&ts, nullptr);
}

// tmpfs when available: creating 100k files on a busy shared ext4 disk takes minutes.
inline std::string fast_base() {
  struct stat st {};
  return ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

// Runs fn in a forked child; returns its exit status, or -1 if it ran past deadline_s (killed).
inline int run_in_child(const std::function<int()>& fn, int deadline_s) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int code = 99;
    try {
      code = fn();
    } catch (...) {
    }
    ::_exit(code);
  }
  for (int waited_ms = 0;; waited_ms += 10) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (waited_ms > deadline_s * 1000) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    timespec ts{0, 10'000'000};
    ::nanosleep(&ts, nullptr);
  }
}

}  // namespace cellgate::workspace::test
