// SPDX-License-Identifier: BSD-3-Clause
// jail_bench: what cellgate-jail adds to a process start (needs root; run by hand, not in CI).
//
// usage: jail_bench [--jail PATH] [--runs N]
// For each workload it runs the command bare and jailed, N times each, and prints medians of
// the wall time to exit. For the jail it also prints the setup time: spawn → the ready-fd line
// (which cellgate-jail writes once the command has been exec'd).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Sample {
  double total_ms = 0;
  double ready_ms = 0;  // jailed only
  int status = 0;
};

Sample run(const std::vector<std::string>& argv, bool with_ready_fd) {
  int ready[2] = {-1, -1};
  if (with_ready_fd && ::pipe(ready) < 0) std::exit(1);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (with_ready_fd) {
    posix_spawn_file_actions_addclose(&fa, ready[0]);  // before the dup2: it may be fd 3
    posix_spawn_file_actions_adddup2(&fa, ready[1], 3);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Sample s;
  auto start = Clock::now();
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) {
    std::perror("posix_spawn");
    std::exit(1);
  }
  posix_spawn_file_actions_destroy(&fa);
  if (with_ready_fd) {
    ::close(ready[1]);
    char buf[512];
    if (::read(ready[0], buf, sizeof buf) > 0) s.ready_ms = ms_since(start);
    ::close(ready[0]);
  }
  ::waitpid(pid, &s.status, 0);
  s.total_ms = ms_since(start);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string self = argv[0];
  std::string jail = self.substr(0, self.rfind('/') + 1) + "cellgate-jail";
  int runs = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key == "--jail") jail = argv[i + 1];
    else if (key == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
  }
  const std::vector<std::pair<std::string, std::vector<std::string>>> workloads = {
      {"/bin/true", {"/bin/true"}},
      {"python3 -c pass", {"/usr/bin/python3", "-c", "pass"}},
      {"ipykernel import", {"/usr/bin/python3", "-c", "import ipykernel.kernelapp"}},
  };
  std::printf("%-18s %10s %10s %10s %12s\n", "workload", "bare ms", "jailed ms", "added ms", "jail setup");
  for (const auto& [name, cmd] : workloads) {
    std::vector<double> bare, jailed, setup;
    for (int r = 0; r < runs; ++r) {
      bare.push_back(run(cmd, false).total_ms);
      std::vector<std::string> jcmd = {jail, "--name", "bench-" + std::to_string(::getpid()), "--ready-fd", "3", "--"};
      jcmd.insert(jcmd.end(), cmd.begin(), cmd.end());
      Sample s = run(jcmd, true);
      if (!WIFEXITED(s.status) || WEXITSTATUS(s.status) != 0) {
        std::fprintf(stderr, "jailed %s failed (status %d)\n", name.c_str(), s.status);
        return 1;
      }
      jailed.push_back(s.total_ms);
      setup.push_back(s.ready_ms);
    }
    std::printf("%-18s %10.1f %10.1f %10.1f %12.1f\n", name.c_str(), median(bare), median(jailed),
                median(jailed) - median(bare), median(setup));
  }
  std::printf("(medians of %d runs; jail setup = spawn of cellgate-jail → its ready line after exec)\n", runs);
  return 0;
}
