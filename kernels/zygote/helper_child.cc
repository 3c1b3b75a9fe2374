// SPDX-License-Identifier: BSD-3-Clause
// helper_child: what the zygote's forked child does — become an ordinary cellgate-jail helper.
#include "kernels/zygote/helper_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "isolation/jail_entry.h"
#include "kernels/zygote/python_image.h"

namespace cellgate::zygote {
namespace {

// NUL-separated strings: the helper's own cmdline, and the kernel's (which the jail's init and the
// kernel copy at clone, so `ps` in the jail shows the kernel's command, as a cold start would).
std::string* g_helper_cmdline = nullptr;
std::string* g_kernel_cmdline = nullptr;

// /proc/PID/cmdline shows [arg_start, arg_end) of the process; point them at `text` (which must live
// as long as the process). Needs CAP_SYS_RESOURCE (we are root). Start first: the heap lies below
// the stack, and the kernel insists on start <= end after each step.
void set_cmdline(const std::string& text) {
  auto start = reinterpret_cast<unsigned long>(text.data());
  auto end = start + text.size();
  if (::prctl(PR_SET_MM, PR_SET_MM_ARG_START, start, 0, 0) < 0 || ::prctl(PR_SET_MM, PR_SET_MM_ARG_END, end, 0, 0) < 0)
    std::fprintf(stderr, "cellgate-zygote: cannot rename the helper: %s\n", std::strerror(errno));
}

void on_spawned() {
  if (g_helper_cmdline != nullptr) set_cmdline(*g_helper_cmdline);
}

std::string joined(const std::vector<std::string>& args, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < args.size(); ++i) {
    out += args[i];
    out.push_back('\0');
  }
  return out;
}

}  // namespace

void run_helper(const std::vector<std::string>& jail_args, const int fds[3]) {
  // Out of the way of 0..3 first: a received fd may already sit on one of them.
  int high[3];
  for (int i = 0; i < 3; ++i) high[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
  if (high[0] < 0 || high[1] < 0 || high[2] < 0) ::_exit(126);
  if (::dup2(high[0], 0) < 0 || ::dup2(high[1], 1) < 0 || ::dup2(high[1], 2) < 0 || ::dup2(high[2], 3) < 0) ::_exit(126);
  ::close_range(4, ~0U, 0);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  std::vector<std::string> argv_store = {"cellgate-jail"};
  argv_store.insert(argv_store.end(), jail_args.begin(), jail_args.end());
  size_t dashdash = argv_store.size();
  for (size_t i = 1; i < argv_store.size(); ++i) {
    if (argv_store[i] == "--") {
      dashdash = i;
      break;
    }
  }
  g_helper_cmdline = new std::string(joined(argv_store, 0, argv_store.size()));
  g_kernel_cmdline = new std::string(joined(argv_store, dashdash + 1, argv_store.size()));
  if (!g_kernel_cmdline->empty()) set_cmdline(*g_kernel_cmdline);
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  isolation::JailHooks hooks;
  hooks.enter = enter_kernel;
  hooks.spawned = on_spawned;
  int rc = isolation::jail_main(static_cast<int>(argv_store.size()), argv.data(), hooks);
  std::fflush(nullptr);
  ::_exit(rc);
}

}  // namespace cellgate::zygote
