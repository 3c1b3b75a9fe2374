// SPDX-License-Identifier: BSD-3-Clause
// signer: HMAC-SHA256 (RFC 2104) from SHA-256 states keyed once and copied per message.
//
// OpenSSL 3's EVP_MAC_CTX_dup allocates six objects per call; at seven messages per execute that
// was 8% of the gateway's user CPU. SHA256_CTX is a plain struct: copying the pre-keyed inner and
// outer states is a memcpy, and a message is signed without touching the heap. The low-level SHA-256
// calls are deprecated in OpenSSL 3 in favour of EVP but remain part of its API.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "protocol/signer.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstring>
#include <utility>

#include "common/assert.h"
#include "common/random.h"

namespace cellgate::protocol {

struct Signer::Impl {
  SHA256_CTX inner;  // after absorbing key XOR ipad
  SHA256_CTX outer;  // after absorbing key XOR opad

  explicit Impl(const std::string& key) {
    unsigned char block[SHA256_CBLOCK] = {};
    if (key.size() > SHA256_CBLOCK) {
      SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), block);  // RFC 2104: hash long keys
    } else {
      std::memcpy(block, key.data(), key.size());
    }
    unsigned char pad[SHA256_CBLOCK];
    for (size_t i = 0; i < sizeof pad; ++i) pad[i] = block[i] ^ 0x36;
    CELLGATE_ASSERT(SHA256_Init(&inner) == 1 && SHA256_Update(&inner, pad, sizeof pad) == 1);
    for (size_t i = 0; i < sizeof pad; ++i) pad[i] = block[i] ^ 0x5c;
    CELLGATE_ASSERT(SHA256_Init(&outer) == 1 && SHA256_Update(&outer, pad, sizeof pad) == 1);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
  }
  ~Impl() {
    OPENSSL_cleanse(&inner, sizeof inner);
    OPENSSL_cleanse(&outer, sizeof outer);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

Signer::Signer(std::string key) : key_(std::move(key)) {
  if (!key_.empty()) impl_ = std::make_unique<Impl>(key_);
}

Signer::~Signer() = default;

Signer::Signer(Signer&& other) noexcept
    : key_(std::exchange(other.key_, std::string())), impl_(std::move(other.impl_)) {}

Signer& Signer::operator=(Signer&& other) noexcept {
  if (this != &other) {
    key_ = std::exchange(other.key_, std::string());
    impl_ = std::move(other.impl_);
  }
  return *this;
}

std::string Signer::sign(std::string_view header, std::string_view parent, std::string_view metadata,
                         std::string_view content) const {
  if (!enabled()) return {};
  SHA256_CTX ctx = impl_->inner;  // thread-safe: the keyed states are only read
  for (std::string_view part : {header, parent, metadata, content}) SHA256_Update(&ctx, part.data(), part.size());
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256_Final(digest, &ctx);
  ctx = impl_->outer;
  SHA256_Update(&ctx, digest, sizeof digest);
  SHA256_Final(digest, &ctx);
  OPENSSL_cleanse(&ctx, sizeof ctx);
  return common::to_hex(digest, sizeof digest);
}

bool Signer::verify(std::string_view signature, std::string_view header, std::string_view parent,
                    std::string_view metadata, std::string_view content) const {
  if (!enabled()) return true;  // auth off: jupyter_client ignores the signature frame
  return constant_time_equal(signature, sign(header, parent, metadata, content));
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  // CRYPTO_memcmp is written so the compiler cannot turn it into an early-exit loop:
  // timing does not reveal where the first mismatch is.
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace cellgate::protocol
