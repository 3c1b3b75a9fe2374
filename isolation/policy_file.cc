// SPDX-License-Identifier: BSD-3-Clause
// policy_file: the JSON jail policy (seccomp choices, limits, binds, env), layered on the default.
#include "isolation/policy_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "common/random.h"
#include "common/unique_fd.h"
#include "isolation/default_policy_json.h"  // generated: kDefaultPolicyJson

namespace cellgate::isolation {
namespace {

using common::Errc;
using common::make_error;
using nlohmann::json;

constexpr size_t kMaxPolicyBytes = 1 << 20;
constexpr size_t kMaxListItems = 1024;

common::Error bad(const std::string& what) { return make_error(Errc::kBadRequest, "policy: " + what); }

bool read_size(const json& v, std::optional<uint64_t>& out, bool is_bytes) {
  uint64_t x = 0;
  if (v.is_number_unsigned()) {
    x = v.get<uint64_t>();
  } else if (v.is_string() && is_bytes) {
    if (!parse_size(v.get<std::string>(), x)) return false;
  } else {
    return false;
  }
  if (x == 0) return false;
  out = x;
  return true;
}

bool read_strings(const json& v, std::vector<std::string>& out) {
  if (!v.is_array() || v.size() > kMaxListItems) return false;
  for (const auto& item : v) {
    if (!item.is_string() || item.get_ref<const std::string&>().empty()) return false;
    out.push_back(item.get<std::string>());
  }
  return true;
}

std::optional<common::Error> layer_limits(const json& l, Limits& limits) {
  if (!l.is_object()) return bad("\"limits\" must be an object");
  for (const auto& [key, v] : l.items()) {
    bool ok = false;
    if (key == "memory") ok = read_size(v, limits.memory, true);
    else if (key == "pids") ok = read_size(v, limits.pids, false);
    else if (key == "nofile") ok = read_size(v, limits.nofile, false);
    else if (key == "fsize") ok = read_size(v, limits.fsize, true);
    else if (key == "tmp_size") ok = read_size(v, limits.tmp_size, true);
    else if (key == "cpu") {
      ok = v.is_number() && v.get<double>() >= 0.01 && v.get<double>() <= 1024;
      if (ok) limits.cpu = v.get<double>();
    } else {
      return bad("unknown limit \"" + key + "\"");
    }
    if (!ok) return bad("invalid value for limit \"" + key + "\"");
  }
  return std::nullopt;
}

std::optional<common::Error> layer_seccomp(const json& s, Policy& p) {
  if (!s.is_object()) return bad("\"seccomp\" must be an object");
  for (const auto& [key, v] : s.items()) {
    if (key == "base") {
      if (!v.is_string() || (v != "docker-default")) return bad("seccomp.base must be \"docker-default\"");
      p.seccomp_base = v.get<std::string>();
    } else if (key != "allow" && key != "deny") {
      return bad("unknown seccomp key \"" + key + "\"");
    }
  }
  for (const char* key : {"allow", "deny"}) {
    if (!s.contains(key)) continue;
    std::vector<std::string> names;
    if (!read_strings(s[key], names)) return bad(std::string("seccomp.") + key + " must be a list of names");
    for (auto& n : names) p.seccomp_changes.emplace_back(std::move(n), key[0] == 'a');
  }
  return std::nullopt;
}

}  // namespace

std::string_view builtin_policy_json() { return kDefaultPolicyJson; }

common::Result<Policy> layer_policy(Policy p, std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  for (const auto& [key, v] : doc.items()) {
    std::optional<common::Error> err;
    if (key == "version") {
      if (v != 1) err = bad("unsupported version (want 1)");
    } else if (key == "seccomp") {
      err = layer_seccomp(v, p);
    } else if (key == "limits") {
      err = layer_limits(v, p.limits);
    } else if (key == "hostname") {
      if (!v.is_string() || v.get_ref<const std::string&>().empty() || v.get_ref<const std::string&>().size() > 64)
        err = bad("hostname must be a string of 1..64 bytes");
      else p.hostname = v.get<std::string>();
    } else if (key == "umask") {
      uint64_t mask = 0;
      std::string s = v.is_string() ? v.get<std::string>() : "";
      char* end = nullptr;
      mask = std::strtoul(s.c_str(), &end, 8);
      if (s.empty() || *end != '\0' || mask > 0777) err = bad("umask must be an octal string like \"0022\"");
      else p.umask = static_cast<mode_t>(mask);
    } else if (key == "env") {
      if (!v.is_object() || v.size() > kMaxListItems) err = bad("env must be an object of strings");
      else for (const auto& [k, val] : v.items()) {
        if (!val.is_string() || k.empty() || k.find('=') != std::string::npos) { err = bad("env entry \"" + k + "\" invalid"); break; }
        p.env.emplace_back(k, val.get<std::string>());
      }
    } else if (key == "ro_binds") {
      std::vector<std::string> items;
      if (!read_strings(v, items)) err = bad("ro_binds must be a list of \"SRC[:DST]\"");
      for (const auto& item : items) {
        BindSpec b;
        if (!parse_bind(item, b)) { err = bad("ro_binds entry \"" + item + "\" invalid"); break; }
        p.ro_binds.push_back(std::move(b));
      }
    } else if (key == "etc_binds" || key == "cache_binds") {
      std::vector<std::string>& list = key == "etc_binds" ? p.etc_binds : p.cache_binds;
      std::vector<std::string> items;
      if (!read_strings(v, items)) err = bad(key + " must be a list of absolute paths");
      for (auto& item : items) {
        if (item[0] != '/') { err = bad(key + " entry \"" + item + "\" is not absolute"); break; }
        list.push_back(std::move(item));
      }
    } else if (key == "usr_etc_links") {
      if (!v.is_boolean()) err = bad("usr_etc_links must be true or false");
      else p.usr_etc_links = v.get<bool>();
    } else if (key == "mpl_cache_dir") {
      if (!v.is_string()) err = bad("mpl_cache_dir must be a string");
      else p.mpl_cache_dir = v.get<std::string>();
    } else {
      err = bad("unknown key \"" + key + "\"");
    }
    if (err) return *err;
  }
  return p;
}

common::Result<Policy> default_policy() { return layer_policy(Policy{}, builtin_policy_json()); }

namespace {

// FILE's text, ≤ 1 MiB; opened without following a final symlink when `no_follow`.
common::Result<std::string> read_policy_text(const std::string& path, bool no_follow) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | (no_follow ? O_NOFOLLOW : 0)));
  if (!fd) return make_error(Errc::kBadRequest, "policy " + path + ": " + std::strerror(errno), errno);
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(Errc::kBadRequest, "policy " + path + ": " + std::strerror(errno), errno);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxPolicyBytes) return bad(path + " is larger than 1 MiB");
  }
  return text;
}

common::Result<Policy> policy_from_text(std::string text, const std::string& origin) {
  auto base = default_policy();
  if (!base) return base;
  if (text.empty()) return base;
  auto layered = layer_policy(std::move(base.value()), text);
  if (!layered) return make_error(Errc::kBadRequest, origin + ": " + layered.error().message);
  layered->file_text = std::move(text);
  return layered;
}

}  // namespace

common::Result<Policy> load_policy(const std::string& path) {
  auto text = read_policy_text(path, false);
  if (!text) return text.error();
  if (text->empty()) return bad(path + " is empty");
  return policy_from_text(std::move(text.value()), path);
}

std::string recorded_policy_path(const std::string& status_file) { return status_file + ".policy"; }

bool record_policy(const Policy& policy, const std::string& status_file) {
  if (status_file.empty()) return true;
  const std::string path = recorded_policy_path(status_file);
  // An unpredictable temp name and O_EXCL, as for the status file (status_json.cc).
  const std::string tmp = path + ".tmp." + common::random_hex(8);
  common::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return false;
  const std::string& text = policy.file_text;
  for (size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd.get(), text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return ::rename(tmp.c_str(), path.c_str()) == 0;
}

common::Result<Policy> load_recorded_policy(const std::string& status_file) {
  const std::string path = recorded_policy_path(status_file);
  auto text = read_policy_text(path, true);
  if (!text && text.error().sys_errno == ENOENT)
    return bad("the jail recorded no policy (" + path + " is missing; pass --policy)");
  if (!text) return text.error();
  return policy_from_text(std::move(text.value()), path);
}

}  // namespace cellgate::isolation
