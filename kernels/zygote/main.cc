// SPDX-License-Identifier: BSD-3-Clause
// cellgate-zygote: a fork server for jailed ipykernels (issue 8 point 3).
//
// It preloads ipykernel and the usual data libraries into an embedded CPython once, then serves
// requests on a root-only unix socket. Each request carries a cellgate-jail command line for
// `/usr/bin/python3 -m ipykernel_launcher -f FILE`; the zygote forks, and the child becomes that
// jail's helper (same code as cellgate-jail: uid slot, cgroups, namespaces, mounts, pivot_root, no
// capabilities, no_new_privs, seccomp, status file, init as pid 1, its own session). Only the last
// step differs: the kernel process continues in the preloaded interpreter instead of execve. No user
// code ever runs in the zygote; the kernels do not depend on it once started.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/zygote/fork_server.h"
#include "kernels/zygote/helper_child.h"
#include "kernels/zygote/image_ranges.h"
#include "kernels/zygote/python_image.h"

namespace {

constexpr const char* kUsage =
    "usage: cellgate-zygote --socket PATH [--preload MOD,MOD...] [--mpl-dir DIR] [--parent-pid PID]\n"
    "                      [--huge-pages on|off] [--shed-image on|off]\n\n"
    "A fork server for jailed ipykernels (run as root, as the gateway does). It preloads the modules\n"
    "(default: ipykernel, IPython, numpy, pandas, matplotlib and what a kernel start imports), then\n"
    "serves cellgate-jail command lines on PATH (mode 0600; see isolation/zygote_protocol.h).\n"
    "  --socket PATH   the unix socket (a zygote already there is replaced and exits)\n"
    "  --preload LIST  comma-separated modules instead of the default list\n"
    "  --mpl-dir DIR   MPLCONFIGDIR while preloading (default /var/cache/cellgate/matplotlib)\n"
    "  --parent-pid P  exit (SIGTERM) when process P, which started it, dies (the kernels it forked stay)\n"
    "  --huge-pages on|off  put the preloaded image into 2 MiB pages, so forks copy less (default on)\n"
    "  --shed-image on|off  a jail's helper and init unmap the image once the kernel is forked (default on)\n"
    "Exits 0 on SIGTERM or when another zygote takes the socket, 1 when it cannot serve, 2 on bad usage.\n";

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

// Makes sure the argv area can hold the helpers' titles (see helper_child.h): re-executes with a
// padding argument when it is too short. Returns only when it is long enough (or re-exec failed).
void ensure_title_area(int argc, char** argv) {
  size_t len = static_cast<size_t>(argv[argc - 1] + std::strlen(argv[argc - 1]) + 1 - argv[0]);
  if (len >= cellgate::zygote::kTitleBytes) {
    cellgate::zygote::set_title_area(argv[0], len);
    return;
  }
  if (argc >= 2 && std::strcmp(argv[argc - 2], "--title-pad") == 0) return;  // already padded: give up
  std::vector<char*> again(argv, argv + argc);
  std::string pad(cellgate::zygote::kTitleBytes, '.');
  again.push_back(const_cast<char*>("--title-pad"));
  again.push_back(pad.data());
  again.push_back(nullptr);
  ::execv("/proc/self/exe", again.data());
}

int main(int argc, char** argv) {
  // Whatever the starter left open must not end up shared with every kernel.
  ::close_range(3, ~0U, 0);
  ensure_title_area(argc, argv);
  cellgate::zygote::record_startup_mappings();  // before anything else is mapped
  std::string socket_path, mpl_dir = "/var/cache/cellgate/matplotlib";
  long parent_pid = 0;
  bool huge_pages = true;
  bool shed_image = true;
  std::vector<std::string> preload = cellgate::zygote::default_preload();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "cellgate-zygote: %s needs a value (see --help)\n", a.c_str());
      return 2;
    }
    if (a == "--socket") socket_path = argv[++i];
    else if (a == "--preload") preload = split_commas(argv[++i]);
    else if (a == "--mpl-dir") mpl_dir = argv[++i];
    else if (a == "--title-pad") ++i;
    else if (a == "--huge-pages" || a == "--shed-image") {
      std::string v = argv[++i];
      if (v != "on" && v != "off") {
        std::fprintf(stderr, "cellgate-zygote: %s takes on or off, got '%s'\n", a.c_str(), v.c_str());
        return 2;
      }
      (a == "--huge-pages" ? huge_pages : shed_image) = v == "on";
    }
    else if (a == "--parent-pid") {
      char* end = nullptr;
      parent_pid = std::strtol(argv[++i], &end, 10);
      if (parent_pid <= 0 || *end != '\0') {
        std::fprintf(stderr, "cellgate-zygote: --parent-pid needs a process id, got '%s'\n", argv[i]);
        return 2;
      }
    }
    else {
      std::fprintf(stderr, "cellgate-zygote: unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (socket_path.empty()) {
    std::fputs("cellgate-zygote: --socket PATH is required\n", stderr);
    return 2;
  }
  if (::geteuid() != 0) {
    std::fputs("cellgate-zygote: must run as root (it builds jails)\n", stderr);
    return 1;
  }
  // A gateway that is killed outright must not leave its ~130 MB fork server behind. The setting is
  // not inherited by fork(2) (prctl(2)), so the kernels forked from here outlive it as before.
  if (parent_pid > 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent_pid) return 0;  // it died before the line above
  }
  std::string err = cellgate::zygote::start_python(preload, mpl_dir, huge_pages);
  if (!err.empty()) {
    std::fprintf(stderr, "cellgate-zygote: %s\n", err.c_str());
    return 1;
  }
  if (shed_image) {
    if (const char* why = cellgate::zygote::record_image_ranges(); *why != '\0')
      std::fprintf(stderr, "cellgate-zygote: helpers and inits keep the image (%s)\n", why);
    else
      std::fprintf(stderr, "cellgate-zygote: helpers and inits unmap the image once running: %zu mappings, %zu MiB\n",
                   cellgate::zygote::image_range_mappings(), cellgate::zygote::image_range_bytes() >> 20);
  }
  // A thread alive at fork would be missing in every kernel (and its locks possibly held).
  if (int threads = cellgate::zygote::thread_count(); threads != 1) {
    std::fprintf(stderr, "cellgate-zygote: %d threads after preload (a preloaded module started threads); refusing to fork\n", threads);
    return 1;
  }
  auto server = cellgate::zygote::ForkServer::listen(socket_path);
  if (!server) {
    std::fprintf(stderr, "cellgate-zygote: %s\n", server.error().message.c_str());
    return 1;
  }
  std::fprintf(stderr, "cellgate-zygote: serving on %s (pid %d)\n", socket_path.c_str(), ::getpid());
  return server->serve();
}
