// SPDX-License-Identifier: BSD-3-Clause
// signer: HMAC-SHA256 over the four JSON parts, as jupyter_client's Session signs them.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "protocol/message.h"

namespace cellgate::protocol {

// Signs and verifies messages with one kernel's key. An empty key means signing is off
// (empty signature), per the Jupyter messaging spec. sign and verify may run on several threads.
class Signer {
 public:
  explicit Signer(std::string key);  // scheme is always hmac-sha256
  ~Signer();
  Signer(Signer&&) noexcept;
  Signer& operator=(Signer&&) noexcept;

  bool enabled() const { return !key_.empty(); }
  // Lowercase hex HMAC of header ‖ parent_header ‖ metadata ‖ content ("" when disabled).
  std::string sign(std::string_view header, std::string_view parent, std::string_view metadata,
                   std::string_view content) const;
  std::string sign(const Message& m) const { return sign(m.header, m.parent_header, m.metadata, m.content); }
  // Compares the lengths first, then the bytes in constant time.
  bool verify(std::string_view signature, std::string_view header, std::string_view parent,
              std::string_view metadata, std::string_view content) const;

 private:
  struct Impl;
  std::string key_;
  std::unique_ptr<Impl> impl_;  // pre-keyed SHA-256 states, copied per call
};

// Constant-time equality: false at once when the lengths differ, else compares every byte.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace cellgate::protocol
