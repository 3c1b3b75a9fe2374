// SPDX-License-Identifier: BSD-3-Clause
// env: the kernel's environment, built from scratch (nothing inherited), and the PATH search.
#include "isolation/env.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "common/unique_fd.h"

namespace cellgate::isolation {
namespace {

constexpr size_t kMaxEnvFileBytes = 1 << 20;

}  // namespace

std::vector<std::string> build_env(const EnvList& policy_env, const EnvList& option_env) {
  // HOME, IPYTHONDIR, XDG_CACHE_HOME and MPLCONFIGDIR keep the workspace free of dot dirs;
  // MPLCONFIGDIR is pre-seeded with the font list so the first matplotlib import is fast.
  const EnvList defaults = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", "/workspace"},
      {"LANG", "C.UTF-8"},
      {"TERM", "dumb"},  // no terminal: readline would wrap a kernel's output in escapes
      {"USER", "sandbox"},
      {"LOGNAME", "sandbox"},
      {"SHELL", "/bin/bash"},
      {"MPLBACKEND", "Agg"},
      {"IPYTHONDIR", "/tmp/.ipython"},
      {"XDG_CACHE_HOME", "/tmp/.cache"},
      {"MPLCONFIGDIR", "/tmp/.config/matplotlib"},
  };
  std::vector<std::string> order;
  std::map<std::string, std::string> values;
  for (const EnvList* list : {&defaults, &policy_env, &option_env}) {
    for (const auto& [k, v] : *list) {
      if (values.count(k) == 0) order.push_back(k);
      values[k] = v;
    }
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& k : order) out.push_back(k + "=" + values[k]);
  return out;
}

std::vector<std::string> exec_candidates(const std::string& command, const std::vector<std::string>& env) {
  if (command.find('/') != std::string::npos) return {command};
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& e : env) {
    if (e.starts_with("PATH=")) path = e.substr(5);
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && dir[0] == '/') out.push_back(dir + "/" + command);  // relative PATH entries skipped
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

common::Status read_env_file(const std::string& path, EnvList& out, size_t max_entries) {
  auto fail = [&](const std::string& why) {
    return common::make_error(common::Errc::kBadRequest, "--env-file " + path + ": " + why);
  };
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (!fd) return fail(std::strerror(errno));
  if (::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode)) return fail("not a regular file");
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxEnvFileBytes) return fail("larger than 1 MiB");
  }
  if (!text.empty() && text.back() != '\0') return fail("the last entry is not ended by a NUL byte");
  for (size_t start = 0, count = 1; start < text.size(); ++count) {
    size_t end = text.find('\0', start);
    std::string_view entry(text.data() + start, end - start);
    size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string_view::npos) return fail("entry " + std::to_string(count) + " is not K=V");
    if (out.size() >= max_entries) return fail("more than " + std::to_string(max_entries) + " entries");
    out.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    start = end + 1;
  }
  return common::ok();
}

}  // namespace cellgate::isolation
