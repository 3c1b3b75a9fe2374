// SPDX-License-Identifier: BSD-3-Clause
// secrets: the values brokered headers refer to (${secret:NAME}); they live only in the proxy.
#include "egress/secrets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "common/unique_fd.h"

namespace cellgate::egress {
namespace {

using common::Errc;
using common::make_error;

constexpr size_t kMaxFileBytes = 1 << 20;
constexpr size_t kMaxValueBytes = 8192;

}  // namespace

common::Result<Secrets> Secrets::load(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return make_error(Errc::kBadRequest, "--secrets: cannot open " + path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode)) return make_error(Errc::kBadRequest, "--secrets: " + path + " is not a file");
  if ((st.st_mode & 077) != 0) return make_error(Errc::kBadRequest, "--secrets: " + path + " is readable by others (chmod 600 it)");
  if (static_cast<size_t>(st.st_size) > kMaxFileBytes) return make_error(Errc::kTooLarge, "--secrets: " + path + " is larger than 1 MiB");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return parse(text, path);
}

common::Result<Secrets> Secrets::parse(const std::string& text, const std::string& origin) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return make_error(Errc::kBadRequest, "--secrets: " + origin + " is not a JSON object of \"NAME\": \"value\"");
  Secrets s;
  for (const auto& [name, value] : doc.items()) {
    if (secret_names("${secret:" + name + "}").size() != 1)
      return make_error(Errc::kBadRequest, fmt::format("--secrets: {}: '{}' is not a secret name (letters, digits, '_', '-', '.')", origin, name));
    if (!value.is_string() || value.get_ref<const std::string&>().size() > kMaxValueBytes)
      return make_error(Errc::kBadRequest, fmt::format("--secrets: {}: {} must be a string of at most 8192 bytes", origin, name));
    for (unsigned char c : value.get_ref<const std::string&>()) {
      if (c < 0x20 || c == 0x7f) return make_error(Errc::kBadRequest, fmt::format("--secrets: {}: {} has a control character", origin, name));
    }
    s.values_[name] = value.get<std::string>();
  }
  return s;
}

common::Status Secrets::check(const Policy& policy, const std::string& field_prefix) const {
  for (size_t i = 0; i < policy.allow.size(); ++i) {
    for (const auto& h : policy.allow[i].headers) {
      for (const auto& name : secret_names(h.value)) {
        if (!values_.count(name))
          return make_error(Errc::kBadRequest, fmt::format("{}.allow[{}].headers.{}: unknown secret '{}'", field_prefix, i, h.name, name));
      }
    }
  }
  return common::ok();
}

std::string Secrets::expand(const std::string& value) const {
  std::string out;
  size_t at = 0;
  for (;;) {
    size_t ref = value.find("${secret:", at);
    size_t close = ref == std::string::npos ? std::string::npos : value.find('}', ref);
    if (close == std::string::npos) break;
    auto it = values_.find(value.substr(ref + 9, close - ref - 9));
    out.append(value, at, ref - at);
    if (it != values_.end()) out += it->second;
    at = close + 1;
  }
  out.append(value, at, std::string::npos);
  return out;
}

}  // namespace cellgate::egress
