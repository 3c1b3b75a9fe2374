// SPDX-License-Identifier: BSD-3-Clause
// sha256: streaming SHA-256 over OpenSSL EVP, lowercase hex digests.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace cellgate::workspace {

// One running digest. Not thread-safe; aborts if OpenSSL fails (out of memory only).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // 64 lowercase hex characters; the object cannot be updated afterwards.
  std::string hex_digest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view data);
// True for 64 lowercase hex characters.
bool is_sha256_hex(std::string_view s);

}  // namespace cellgate::workspace
