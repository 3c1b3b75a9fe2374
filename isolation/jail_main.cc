// SPDX-License-Identifier: BSD-3-Clause
// jail_main: cellgate-jail — parse options and policy, then build and supervise one jail.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "isolation/jail.h"
#include "isolation/join.h"
#include "isolation/seccomp_policy.h"
#include "isolation/status_json.h"

namespace {

using cellgate::isolation::failed_json;

int bad_options(const std::string& message, int ready_fd) {
  std::fprintf(stderr, "cellgate-jail: %s\n", message.c_str());
  cellgate::isolation::write_ready_line(ready_fd, failed_json("options", 0, message));
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  auto options = cellgate::isolation::parse_options(argc, argv);
  cellgate::isolation::remember_helper_argv(argc, argv);
  if (!options) return bad_options(options.error().message, -1);
  if (options->help) {
    std::fputs(cellgate::isolation::help_text().c_str(), stdout);
    return 0;
  }
  int ready_fd = options->ready_fd;
  if (ready_fd >= 0 && ::fcntl(ready_fd, F_GETFD) < 0)
    return bad_options("--ready-fd " + std::to_string(ready_fd) + " is not open", -1);
  if (options->name.empty()) options->name = "jail-" + std::to_string(::getpid());
  auto policy = options->policy_file.empty() ? cellgate::isolation::default_policy()
                                             : cellgate::isolation::load_policy(options->policy_file);
  if (!policy) return bad_options(policy.error().message, ready_fd);
  if (auto names = cellgate::isolation::check_syscall_names(*policy); !names)
    return bad_options(names.error().message, ready_fd);
  if (!options->join.empty()) {
    // Same session as the caller: the command belongs to whoever runs the join.
    cellgate::isolation::Join join(std::move(options.value()), std::move(policy.value()));
    return join.run();
  }
  // Its own session, so the gateway's death (and its terminal's signals) leave the jail alone;
  // EPERM when we already lead a process group, which is harmless.
  ::setsid();
  cellgate::isolation::Jail jail(std::move(options.value()), std::move(policy.value()));
  return jail.run();
}
