// SPDX-License-Identifier: BSD-3-Clause
// helper_child: what the zygote's forked child does — become an ordinary cellgate-jail helper.
#include "kernels/zygote/helper_child.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "isolation/jail_entry.h"
#include "isolation/jail_options.h"
#include "isolation/jail_plan.h"
#include "isolation/status_json.h"
#include "isolation/zygote_protocol.h"
#include "kernels/zygote/image_ranges.h"
#include "kernels/zygote/python_image.h"

namespace cellgate::zygote {
namespace {

char* g_title = nullptr;
size_t g_title_len = 0;

// The helper's own command line and the kernel's (which the jail's init and the kernel copy at clone,
// so `ps` in the jail shows the kernel's command, as a cold start would), space-separated.
std::string* g_helper_cmdline = nullptr;
std::string* g_kernel_cmdline = nullptr;

// /proc/PID/cmdline reads the argv area; when its last byte is not NUL the kernel reads it as one
// string up to the first NUL (the setproctitle(3) convention), so trailing padding does not show.
// The helper's starts "cellgate-jail --name ID", which is what the gateway looks for when it re-adopts.
void set_cmdline(const std::string& text) noexcept {
  if (g_title == nullptr || g_title_len < 2) return;
  size_t n = std::min(text.size(), g_title_len - 2);
  std::memcpy(g_title, text.data(), n);
  std::memset(g_title + n, 0, g_title_len - n);
  g_title[g_title_len - 1] = '.';
}

void on_spawned() {
  if (g_helper_cmdline != nullptr) set_cmdline(*g_helper_cmdline);
}

std::string joined(const std::vector<std::string>& args, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < args.size(); ++i) out += (out.empty() ? "" : " ") + args[i];
  return out;
}

// A request the fork server does not run: one line on the log, a failed ready line, exit 125 (as
// cellgate-jail's bad options).
[[noreturn]] void refuse(const std::string& message) {
  std::fprintf(stderr, "cellgate-zygote: refused: %s\n", message.c_str());
  isolation::write_ready_line(3, isolation::failed_json("options", EINVAL, "fork server: " + message));
  ::_exit(125);
}

}  // namespace

void set_title_area(char* start, size_t len) {
  g_title = start;
  g_title_len = len;
}

void show_kernel_title() noexcept {
  if (g_kernel_cmdline != nullptr) set_cmdline(*g_kernel_cmdline);
}

void run_helper(std::string_view request, const int fds[3]) {
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

  auto jail_args = isolation::decode_zygote_request(request);
  if (!jail_args) refuse(jail_args.error().message);
  std::vector<std::string> argv_store = {"cellgate-jail"};
  argv_store.insert(argv_store.end(), jail_args->begin(), jail_args->end());
  {
    std::vector<const char*> check;
    for (const auto& a : argv_store) check.push_back(a.c_str());
    auto options = isolation::parse_options(static_cast<int>(check.size()), check.data());
    if (options && (options->ready_fd != 3 || !isolation::zygote_can_run(options->command)))
      refuse("the fork server runs only `/usr/bin/python3 -m ipykernel_launcher -f /FILE` jails with --ready-fd 3");
  }
  size_t dashdash = argv_store.size();
  for (size_t i = 1; i < argv_store.size(); ++i) {
    if (argv_store[i] == "--") {
      dashdash = i;
      break;
    }
  }
  g_helper_cmdline = new std::string(joined(argv_store, 0, argv_store.size()));
  g_kernel_cmdline = new std::string(joined(argv_store, dashdash + 1, argv_store.size()));
  // Init blanks our title in its copy to "cellgate-init", as cellgate-jail's init does (no host paths
  // in /proc/1/cmdline); the kernel then writes its own command (show_kernel_title).
  set_cmdline(*g_kernel_cmdline);  // the zygote's own argv strings must not reach the jail
  if (g_title != nullptr) {
    char* area[] = {g_title};
    isolation::remember_helper_argv(1, area);
  }
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  isolation::JailHooks hooks;
  hooks.enter = enter_kernel;
  hooks.spawned = on_spawned;
  hooks.shed = image_ranges(&hooks.n_shed);
  int rc = isolation::jail_main(static_cast<int>(argv_store.size()), argv.data(), hooks);
  std::fflush(nullptr);
  ::_exit(rc);
}

}  // namespace cellgate::zygote
