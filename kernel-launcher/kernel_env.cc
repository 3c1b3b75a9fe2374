// SPDX-License-Identifier: BSD-3-Clause
// kernel_env: a kernel's environment, built from scratch.
#include "kernel-launcher/kernel_env.h"

namespace cellgate::launcher {

using common::Errc;
using common::make_error;

namespace {
constexpr size_t kMaxValue = 4096;
constexpr size_t kMaxVars = 256;

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 256) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}
}  // namespace

common::Result<std::map<std::string, std::string>> filter_client_env(const nlohmann::json& env,
                                                                      const std::set<std::string>& allowed,
                                                                      std::set<std::string>* dropped) {
  std::map<std::string, std::string> out;
  if (env.is_null()) return out;
  if (!env.is_object()) return make_error(Errc::kBadRequest, "env must be an object of strings");
  if (env.size() > kMaxVars) return make_error(Errc::kBadRequest, "env has more than 256 variables");
  for (const auto& [k, v] : env.items()) {
    if (!valid_name(k)) return make_error(Errc::kBadRequest, "env: invalid variable name");
    if (!v.is_string()) return make_error(Errc::kBadRequest, "env." + k + " must be a string");
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > kMaxValue || s.find('\0') != std::string::npos)
      return make_error(Errc::kBadRequest, "env." + k + " must be at most 4096 bytes without NUL");
    if (k.rfind("KERNEL_", 0) == 0 || allowed.count(k)) {
      out[k] = s;
    } else if (dropped) {
      dropped->insert(k);
    }
  }
  return out;
}

std::string substitute_vars(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      size_t close = text.find('}', i + 2);
      if (close != std::string::npos) {
        auto it = vars.find(text.substr(i + 2, close - i - 2));
        if (it != vars.end()) out += it->second;
        i = close + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::map<std::string, std::string> build_kernel_env(const KernelSpec& spec,
                                                    const std::map<std::string, std::string>& client_env,
                                                    const std::map<std::string, std::string>& forced) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"LANG", "C.UTF-8"},
      // A kernel is no terminal. With a terminal's TERM, readline-driven kernels (the Octave kernel
      // runs octave-cli on a pty) wrap every output in bracketed-paste escapes; ipykernel sets its own.
      {"TERM", "dumb"},
      {"PYTHONUNBUFFERED", "1"},
      // ipykernel defaults to the inline backend only when MPLBACKEND is unset; say so explicitly so a
      // jail default (Agg) cannot hide plots from notebooks.
      {"MPLBACKEND", "module://matplotlib_inline.backend_inline"},
      {"JPY_PARENT_PID", "1"},
  };
  for (const auto& [k, v] : client_env) env[k] = v;
  for (const auto& [k, v] : spec.env) env[k] = substitute_vars(v, env);
  for (const auto& [k, v] : forced) env[k] = v;
  return env;
}

}  // namespace cellgate::launcher
