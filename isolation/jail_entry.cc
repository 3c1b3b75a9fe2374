// SPDX-License-Identifier: BSD-3-Clause
// jail_entry: parse options and policy, then build and supervise one jail (or join one).
#include "isolation/jail_entry.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "isolation/attach_workspace.h"
#include "isolation/egress_attach.h"
#include "isolation/env.h"
#include "isolation/jail.h"
#include "isolation/join.h"
#include "isolation/seccomp_policy.h"
#include "isolation/status_json.h"

namespace cellgate::isolation {
namespace {

int bad_options(const std::string& message, int ready_fd) {
  std::fprintf(stderr, "cellgate-jail: %s\n", message.c_str());
  write_ready_line(ready_fd, failed_json("options", 0, message));
  return 125;
}

}  // namespace

int jail_main(int argc, char** argv, const JailHooks& hooks) {
  auto options = parse_options(argc, argv);
  if (!options) return bad_options(options.error().message, -1);
  const bool forked = hooks.enter != nullptr;
  if (options->help && !forked) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  if (!options->attach_workspace.empty() && !forked)
    return attach_workspace(options->attach_workspace, options->workspace);
  if (!options->egress_attach.empty() && !forked)
    return reattach_egress(options->egress_attach, options->egress_socket, options->name);
  int ready_fd = options->ready_fd;
  if (ready_fd >= 0 && ::fcntl(ready_fd, F_GETFD) < 0)
    return bad_options("--ready-fd " + std::to_string(ready_fd) + " is not open", -1);
  if (forked && (options->help || !options->join.empty()))
    return bad_options("the fork server builds jails only (no --help, no --join)", ready_fd);
  if (!options->env_file.empty()) {
    // The file's entries come before --env's (later entries win in build_env).
    EnvList env;
    if (auto st = read_env_file(options->env_file, env, kMaxEnvEntries); !st) return bad_options(st.error().message, ready_fd);
    env.insert(env.end(), options->env.begin(), options->env.end());
    if (env.size() > kMaxEnvEntries) return bad_options("more than 256 environment entries", ready_fd);
    options->env = std::move(env);
  }
  if (options->name.empty()) options->name = "jail-" + std::to_string(::getpid());
  if (!options->join.empty() && options->policy_file.empty()) {
    // Same session as the caller: the command belongs to whoever runs the join. Without --policy it
    // gets the policy its jail recorded (the kernelspec's, not the caller's), once the jail is known.
    Join join(std::move(options.value()), std::nullopt);
    return join.run();
  }
  auto policy = options->policy_file.empty() ? default_policy() : load_policy(options->policy_file);
  if (!policy) return bad_options(policy.error().message, ready_fd);
  if (auto names = check_syscall_names(*policy); !names) return bad_options(names.error().message, ready_fd);
  if (!options->join.empty()) {
    Join join(std::move(options.value()), std::move(policy.value()));
    return join.run();
  }
  // Its own session, so the gateway's death (and its terminal's signals) leave the jail alone;
  // EPERM when we already lead a process group, which is harmless.
  ::setsid();
  Jail jail(std::move(options.value()), std::move(policy.value()));
  jail.set_hooks(hooks);
  return jail.run();
}

}  // namespace cellgate::isolation
