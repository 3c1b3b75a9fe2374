// SPDX-License-Identifier: BSD-3-Clause
// scratch_dir: a test's private /tmp/cgt-* dir, removed at the end, and swept after a killed run.
#pragma once

#include <glob.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cellgate::testing {

// A killed test (a ctest TIMEOUT sends SIGKILL) never runs its destructors, and its dir, with a data
// dir and kernels' logs, stayed in /tmp until the disk filled. Each dir names its owner (pid and start
// time, which a reused pid does not share); a new ScratchDir removes the dirs of owners that are gone,
// after detaching what is mounted under them so that remove_all never walks into a mount. Dirs of live
// owners (other worktrees' runs) are left alone.
class ScratchDir {
 public:
  ScratchDir() {
    sweep_stale();
    // Short: ipc socket paths under it must fit sun_path (108 bytes).
    std::string tmpl = "/tmp/cgt-XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
    std::ofstream(path_ + "/owner") << ::getpid() << ' ' << start_time(::getpid()) << '\n';
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  // Field 22 of /proc/PID/stat (proc(5)), counted after the command's closing parenthesis.
  static std::string start_time(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::istringstream rest(stat.substr(stat.rfind(')') + 1));
    std::string field;
    int read = 0;
    while (read < 20 && rest >> field) ++read;
    return read == 20 ? field : std::string();
  }

  static void sweep_stale() {
    glob_t found{};
    if (::glob("/tmp/cgt-*", 0, nullptr, &found) != 0) return;
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      const std::string dir = found.gl_pathv[i];
      pid_t pid = 0;
      std::string start;
      if (!(std::ifstream(dir + "/owner") >> pid >> start) || start_time(pid) == start) continue;
      std::vector<std::string> under;
      std::ifstream mountinfo("/proc/self/mountinfo");
      for (std::string line; std::getline(mountinfo, line);) {
        std::istringstream fields(line);
        std::string point;
        for (int f = 0; f < 5; ++f) fields >> point;
        if (point.rfind(dir + "/", 0) == 0) under.push_back(point);
      }
      std::sort(under.begin(), under.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
      for (const auto& m : under) ::umount2(m.c_str(), MNT_DETACH);
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
    ::globfree(&found);
  }

  std::string path_;
};

}  // namespace cellgate::testing
