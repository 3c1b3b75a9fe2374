// SPDX-License-Identifier: BSD-3-Clause
// signer: HMAC-SHA256 through OpenSSL 3's EVP_MAC, keyed once and duplicated per message.
#include "protocol/signer.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <utility>

#include "common/assert.h"
#include "common/random.h"

namespace cellgate::protocol {

// OpenSSL failures here mean a broken library or no memory; per the error policy both crash.
struct Signer::Impl {
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* keyed = nullptr;  // initialised with the key; never updated, only duplicated

  explicit Impl(const std::string& key) {
    mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    CELLGATE_ASSERT(mac != nullptr);
    keyed = EVP_MAC_CTX_new(mac);
    CELLGATE_ASSERT(keyed != nullptr);
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    int ok = EVP_MAC_init(keyed, reinterpret_cast<const unsigned char*>(key.data()), key.size(), params);
    CELLGATE_ASSERT(ok == 1);
  }
  ~Impl() {
    EVP_MAC_CTX_free(keyed);
    EVP_MAC_free(mac);
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
  // Duplicating the keyed context skips re-deriving the HMAC key pads on every message.
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_dup(impl_->keyed);
  CELLGATE_ASSERT(ctx != nullptr);
  bool ok = true;
  for (std::string_view part : {header, parent, metadata, content}) {
    ok = ok && EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(part.data()), part.size()) == 1;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  size_t length = 0;
  ok = ok && EVP_MAC_final(ctx, digest, &length, sizeof digest) == 1;
  EVP_MAC_CTX_free(ctx);
  CELLGATE_ASSERT(ok);
  return common::to_hex(digest, length);
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
