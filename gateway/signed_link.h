// SPDX-License-Identifier: BSD-3-Clause
// signed_link: links that open one artifact without a token until they expire, signed with HMAC-SHA256
// under a key of the gateway's own (never a user's token, which may change or be shared).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace cellgate::gateway {

enum class LinkCheck {
  kValid,
  kMalformed,     // expires or signature not of their form (403, as a bad signature)
  kBadSignature,  // 403: tampered with, or signed under another key
  kExpired,       // 410: the signature holds but the time has passed
};

// Thread-safe (immutable after construction).
class LinkSigner {
 public:
  static constexpr size_t kKeyBytes = 32;
  static constexpr int64_t kMaxLifetimeS = 7 * 24 * 3600;  // the longest expires_in a link may ask

  // key: at least kKeyBytes bytes (asserted).
  explicit LinkSigner(std::string key);
  // The key in path (mode 0600, at most 4 KiB), made from 32 random bytes when missing (O_EXCL: of
  // two gateways racing to make it, both read the one that won). kInternal with errno, kBadRequest for
  // a key file shorter than kKeyBytes or that is not a regular file.
  static common::Result<LinkSigner> load_or_create(const std::string& path);

  // Lowercase hex HMAC-SHA256 of "cellgate artifact link\n<artifact>\n<expires>" (expires: unix seconds).
  std::string sign(std::string_view artifact, int64_t expires) const;
  // Order of checks: expires is 1-18 decimal digits and the signature 64 lowercase hex characters
  // (else kMalformed); the signature, compared in constant time (else kBadSignature); then the time,
  // now_s >= expires is kExpired. The signature goes first so that an expired link tells nothing more
  // than a forged one about the key.
  LinkCheck check(std::string_view artifact, std::string_view expires, std::string_view signature,
                  int64_t now_s) const;

 private:
  std::string key_;
};

}  // namespace cellgate::gateway
