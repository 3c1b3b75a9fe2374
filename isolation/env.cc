// SPDX-License-Identifier: BSD-3-Clause
// env: the kernel's environment, built from scratch (nothing inherited), and the PATH search.
#include "isolation/env.h"

#include <map>

namespace cellgate::isolation {

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

}  // namespace cellgate::isolation
