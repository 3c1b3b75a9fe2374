// SPDX-License-Identifier: BSD-3-Clause
// kernelspec: discovery and parsing of Jupyter kernelspecs.
#include "kernel-launcher/kernelspec.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/log.h"

namespace cellgate::launcher {
namespace {

using common::Errc;
using common::make_error;
using nlohmann::json;

constexpr size_t kMaxKernelJsonBytes = 1 << 20;

std::vector<std::string> split_path_list(const char* value) {
  std::vector<std::string> out;
  if (!value) return out;
  std::string s(value), cur;
  std::istringstream in(s);
  while (std::getline(in, cur, ':')) {
    if (!cur.empty()) out.push_back(cur);
  }
  return out;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_resource_name(const std::string& f) {
  // jupyter_server serves kernel.js, kernel.css and every logo-* file.
  return f == "kernel.js" || f == "kernel.css" || (f.rfind("logo-", 0) == 0 && f.size() > 5);
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  return out;
}

}  // namespace

bool valid_kernelspec_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string> kernelspec_search_path(const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> out = extra_dirs;
  for (const auto& p : split_path_list(std::getenv("JUPYTER_PATH"))) out.push_back(p + "/kernels");
  if (const char* home = std::getenv("HOME")) out.push_back(std::string(home) + "/.local/share/jupyter/kernels");
  out.push_back("/usr/local/share/jupyter/kernels");
  out.push_back("/usr/share/jupyter/kernels");
  return out;
}

common::Result<KernelSpec> load_kernelspec(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/kernel.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::kNotFound, path + ": cannot open");
  std::string text;
  text.resize(kMaxKernelJsonBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxKernelJsonBytes) return make_error(Errc::kBadRequest, path + ": larger than 1 MiB");
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(Errc::kBadRequest, path + ": not a JSON object");

  KernelSpec spec;
  spec.name = name;
  spec.dir = dir;
  auto argv = j.find("argv");
  if (argv == j.end() || !argv->is_array() || argv->empty())
    return make_error(Errc::kBadRequest, path + ": argv must be a non-empty array of strings");
  for (const auto& a : *argv) {
    if (!a.is_string()) return make_error(Errc::kBadRequest, path + ": argv must be a non-empty array of strings");
    spec.argv.push_back(a.get<std::string>());
  }
  auto dn = j.find("display_name");
  if (dn == j.end() || !dn->is_string()) return make_error(Errc::kBadRequest, path + ": display_name must be a string");
  spec.display_name = dn->get<std::string>();
  if (auto l = j.find("language"); l != j.end() && l->is_string()) spec.language = l->get<std::string>();
  if (auto im = j.find("interrupt_mode"); im != j.end()) {
    if (*im == "message") {
      spec.interrupt_mode = InterruptMode::kMessage;
    } else if (*im != "signal") {
      return make_error(Errc::kBadRequest, path + ": interrupt_mode must be \"signal\" or \"message\"");
    }
  }
  if (auto env = j.find("env"); env != j.end()) {
    if (!env->is_object()) return make_error(Errc::kBadRequest, path + ": env must be an object of strings");
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string()) return make_error(Errc::kBadRequest, path + ": env." + k + " must be a string");
      spec.env[k] = v.get<std::string>();
    }
  }
  if (auto md = j.find("metadata"); md != j.end() && md->is_object()) spec.metadata = *md;
  spec.raw = std::move(j);
  for (const auto& f : list_dir(dir)) {
    if (is_resource_name(f)) spec.resources.push_back(f);
  }
  return spec;
}

std::map<std::string, KernelSpec> discover_kernelspecs(const std::vector<std::string>& search_path) {
  std::map<std::string, KernelSpec> out;
  for (const auto& root : search_path) {
    if (!is_dir(root)) continue;
    for (const auto& name : list_dir(root)) {
      if (out.count(name) || !valid_kernelspec_name(name)) continue;
      const std::string dir = root + "/" + name;
      if (!is_dir(dir)) continue;
      auto spec = load_kernelspec(dir, name);
      if (!spec) {
        common::log_warn("msg=\"skipping kernelspec\" name={} error=\"{}\"", name, spec.error().message);
        continue;
      }
      out.emplace(name, std::move(spec.value()));
    }
  }
  return out;
}

json kernelspec_model(const KernelSpec& spec, const std::string& base_url) {
  json resources = json::object();
  for (const auto& f : spec.resources) {
    std::string key = f;
    if (f.rfind("logo-", 0) == 0) key = f.substr(0, f.rfind('.'));  // logo-64x64.png → logo-64x64
    resources[key] = base_url + "kernelspecs/" + spec.name + "/" + f;
  }
  json s = spec.raw;
  if (!s.contains("interrupt_mode")) s["interrupt_mode"] = "signal";
  if (!s.contains("env")) s["env"] = json::object();
  if (!s.contains("metadata")) s["metadata"] = json::object();
  if (!s.contains("language")) s["language"] = "";
  return json{{"name", spec.name}, {"spec", std::move(s)}, {"resources", std::move(resources)}};
}

std::vector<std::string> substitute_argv(const std::vector<std::string>& argv, const std::string& connection_file) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  static const std::string kToken = "{connection_file}";
  for (std::string a : argv) {
    for (size_t pos = a.find(kToken); pos != std::string::npos; pos = a.find(kToken, pos + connection_file.size()))
      a.replace(pos, kToken.size(), connection_file);
    out.push_back(std::move(a));
  }
  if (!out.empty() && (out[0] == "python" || out[0] == "python3")) out[0] = kKernelPython;
  return out;
}

}  // namespace cellgate::launcher
