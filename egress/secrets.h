// SPDX-License-Identifier: BSD-3-Clause
// secrets: the values brokered headers refer to (${secret:NAME}); they live only in the proxy.
#pragma once

#include <map>
#include <string>

#include "common/result.h"
#include "egress/policy.h"

namespace cellgate::egress {

class Secrets {
 public:
  Secrets() = default;
  // A JSON object {"NAME": "value", ...} of at most 1 MiB; the file must not be readable by group or
  // others. Errors: one line naming the file.
  static common::Result<Secrets> load(const std::string& path);
  static common::Result<Secrets> parse(const std::string& text, const std::string& origin);

  // Every ${secret:NAME} of the policy's headers names a known secret (kBadRequest naming the field).
  common::Status check(const Policy& policy, const std::string& field_prefix) const;
  // The header value with each ${secret:NAME} replaced. Never log the result.
  std::string expand(const std::string& value) const;
  size_t size() const { return values_.size(); }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace cellgate::egress
