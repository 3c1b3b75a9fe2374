// SPDX-License-Identifier: BSD-3-Clause
// pool_claim: a warm-pool kernel's claim and warm-up code, from its kernelspec.
#include "gateway/pool_claim.h"

#include <strings.h>

#include <nlohmann/json.hpp>

#include "common/assert.h"
#include "kernel-launcher/language_literal.h"

namespace cellgate::gateway {

using common::Errc;
using common::make_error;

namespace {

constexpr std::string_view kPlaceholder = "{env}";

// Python's claim, built in: every ipykernel-based kernelspec can be pooled without declaring one.
// __import__ keeps the user's namespace clean.
constexpr const char* kPythonClaim =
    "__import__('os').environ.update(__import__('json').loads({env}))\n__import__('os').chdir('/workspace')\n";
// A fresh ipykernel's first execute compiles and imports more than later ones (5-15 ms on a loaded
// 2-core host): the pool pays it, not the claim.
constexpr const char* kPythonWarmup = "pass";

size_t count(const std::string& s, std::string_view what) {
  size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

common::Result<ClaimCode> claim_code_for(const launcher::KernelSpec& spec) {
  ClaimCode code;
  code.language = spec.language;
  const bool python = ::strcasecmp(spec.language.c_str(), "python") == 0;
  nlohmann::json md = nlohmann::json::object();
  if (auto it = spec.metadata.find("cellgate"); it != spec.metadata.end() && it->is_object()) md = *it;
  for (const char* key : {"claim", "warmup"}) {
    auto v = md.find(key);
    if (v == md.end() || v->is_null()) continue;
    if (!v->is_string())
      return make_error(Errc::kBadRequest, "kernelspec " + spec.name + ": metadata.cellgate." + key + " must be a string of code");
    (std::string_view(key) == "claim" ? code.claim : code.warmup) = v->get<std::string>();
  }
  if (code.claim.empty() && python) {
    code.claim = kPythonClaim;
    if (!md.contains("warmup")) code.warmup = kPythonWarmup;
  }
  if (code.claim.empty())
    return make_error(Errc::kBadRequest, "kernelspec " + spec.name + " (" + spec.language +
                                             ") declares no metadata.cellgate.claim: the code that enters /workspace "
                                             "and sets the {env} variables in its language (README, Kernels)");
  if (count(code.claim, kPlaceholder) != 1)
    return make_error(Errc::kBadRequest, "kernelspec " + spec.name + ": metadata.cellgate.claim must hold {env} exactly once");
  if (!launcher::has_string_literal(spec.language))
    return make_error(Errc::kBadRequest, "kernelspec " + spec.name + ": cellgate has no checked string literal for " +
                                             spec.language + ", so it cannot pass {env} to its claim");
  return code;
}

std::string claim_cell(const ClaimCode& code, const std::map<std::string, std::string>& env) {
  const std::string text = nlohmann::json(env).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  auto literal = launcher::string_literal(code.language, text);
  std::string cell = code.claim;
  // claim_code_for checked the language and the placeholder; ensure_ascii makes the text printable.
  const auto at = cell.find(kPlaceholder);
  CELLGATE_ASSERT(literal && at != std::string::npos);
  cell.replace(at, kPlaceholder.size(), *literal);
  return cell;
}

}  // namespace cellgate::gateway
