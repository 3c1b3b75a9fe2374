// SPDX-License-Identifier: BSD-3-Clause
// kernelspec: discovery and parsing of Jupyter kernelspecs (kernel.json + resources).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace cellgate::launcher {

enum class InterruptMode { kSignal, kMessage };

struct KernelSpec {
  std::string name;          // directory name: [A-Za-z0-9._-]+
  std::string dir;           // absolute path of the kernelspec directory
  std::vector<std::string> argv;
  std::string display_name;
  std::string language;
  InterruptMode interrupt_mode = InterruptMode::kSignal;
  std::map<std::string, std::string> env;  // values may hold ${VAR}
  nlohmann::json metadata = nlohmann::json::object();
  nlohmann::json raw;                      // kernel.json as parsed, for the REST model
  std::vector<std::string> resources;      // logo-*.png, logo-svg.svg, kernel.js, kernel.css present in dir
};

// The search path: extra dirs first, then $JUPYTER_PATH entries, ~/.local/share/jupyter,
// /usr/local/share/jupyter, /usr/share/jupyter (each + "/kernels").
std::vector<std::string> kernelspec_search_path(const std::vector<std::string>& extra_dirs);

// Parses one kernel.json. Errors (kBadRequest) name the file and the problem.
common::Result<KernelSpec> load_kernelspec(const std::string& dir, const std::string& name);

// Finds all kernelspecs; the first directory that provides a name wins. A broken kernel.json is
// skipped and logged (warn); it never takes the listing down.
std::map<std::string, KernelSpec> discover_kernelspecs(const std::vector<std::string>& search_path);

// True for names a kernelspec (and its URL segment) may have.
bool valid_kernelspec_name(std::string_view name);

// jupyter_server's KernelSpecModel: {name, spec, resources{name: URL}}. Resource URLs are
// `<base_url>kernelspecs/<name>/<file>`: clients rewrite everything after the last /kernelspecs/.
nlohmann::json kernelspec_model(const KernelSpec& spec, const std::string& base_url);

// Replaces {connection_file} in every argv element, and a bare `python` or `python3` argv[0] with
// kKernelPython: jupyter_client runs those as its own sys.executable, and Debian ships kernelspecs
// that rely on it (python3-octave-kernel's argv is ["python", "-m", "octave_kernel", ...]), while
// Debian 12 has no /usr/bin/python.
std::vector<std::string> substitute_argv(const std::vector<std::string>& argv, const std::string& connection_file);

// The Python that kernelspecs saying `python` get, and that the fork server serves.
inline constexpr const char* kKernelPython = "/usr/bin/python3";

}  // namespace cellgate::launcher
