// SPDX-License-Identifier: BSD-3-Clause
// jail_args: the cellgate-jail command line for one kernel (shared by the jail and zygote spawners).
#include "kernel-launcher/jail_args.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/core.h>

#include "common/unique_fd.h"
#include "kernel-launcher/egress_env.h"

namespace cellgate::launcher {

std::string jail_status_file(const SpawnRequest& req) { return req.private_dir + "/jail.json"; }

std::string jail_env_file(const SpawnRequest& req) { return req.private_dir + "/env"; }

common::Status write_env_file(const std::string& path, const std::map<std::string, std::string>& env) {
  std::string text;
  for (const auto& [k, v] : env) text.append(k).append(1, '=').append(v).append(1, '\0');
  const std::string tmp = path + ".tmp";
  common::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return common::make_error(common::Errc::kInternal, "write " + tmp, errno);
  for (size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd.get(), text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return common::make_error(common::Errc::kInternal, "write " + tmp, errno);
    off += static_cast<size_t>(n);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return common::make_error(common::Errc::kInternal, "rename " + tmp, errno);
  return common::ok();
}

std::vector<std::string> jail_args(const SpawnRequest& req, const std::vector<std::string>& extra, int ready_fd) {
  // The status file and the log live outside the dir the kernel can write: a kernel must not be able
  // to forge the pids the gateway signals, or swap the log for a symlink the gateway would read.
  std::vector<std::string> argv = {"--name", req.kernel_id, "--bind-same", req.runtime_dir,
                                   "--status-file", jail_status_file(req), "--ready-fd", std::to_string(ready_fd)};
  if (!req.workspace_dir.empty()) argv.insert(argv.end(), {"--workspace", req.workspace_dir});
  if (!req.policy_file.empty()) argv.insert(argv.end(), {"--policy", req.policy_file});
  if (!req.cgroup_owner.empty()) argv.insert(argv.end(), {"--cgroup-owner", req.cgroup_owner});
  const Limits& l = req.limits;
  if (l.memory_bytes) argv.insert(argv.end(), {"--memory", std::to_string(l.memory_bytes)});
  if (l.pids) argv.insert(argv.end(), {"--pids", std::to_string(l.pids)});
  if (l.cpus > 0) argv.insert(argv.end(), {"--cpu", fmt::format("{}", l.cpus)});
  if (l.nofile) argv.insert(argv.end(), {"--nofile", std::to_string(l.nofile)});
  if (l.fsize_bytes) argv.insert(argv.end(), {"--fsize", std::to_string(l.fsize_bytes)});
  if (l.tmp_bytes) argv.insert(argv.end(), {"--tmp-size", std::to_string(l.tmp_bytes)});
  auto egress = egress_jail_args(req.egress);
  argv.insert(argv.end(), egress.begin(), egress.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--env-file", jail_env_file(req)});
  argv.push_back("--");
  argv.insert(argv.end(), req.argv.begin(), req.argv.end());
  return argv;
}

}  // namespace cellgate::launcher
