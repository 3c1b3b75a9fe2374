// SPDX-License-Identifier: BSD-3-Clause
// sha256: streaming SHA-256 over OpenSSL EVP, lowercase hex digests.
#include "workspace/sha256.h"

#include <openssl/evp.h>

#include "common/assert.h"
#include "common/random.h"

namespace cellgate::workspace {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  CELLGATE_ASSERT(impl_->ctx != nullptr);
  CELLGATE_ASSERT(EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) == 1);
}

Sha256::~Sha256() = default;

void Sha256::update(const void* data, size_t n) {
  CELLGATE_ASSERT(EVP_DigestUpdate(impl_->ctx, data, n) == 1);
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CELLGATE_ASSERT(EVP_DigestFinal_ex(impl_->ctx, md, &len) == 1);
  return common::to_hex(md, len);
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace cellgate::workspace
