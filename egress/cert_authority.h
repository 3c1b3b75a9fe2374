// SPDX-License-Identifier: BSD-3-Clause
// cert_authority: the interception CA (loaded or created on disk) and the leaf certificates it mints.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "common/result.h"

namespace cellgate::egress {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// Only the jails trust this CA: its certificate is bound read-only into each jail's trust bundle
// (bundle_path), its key never leaves `dir` (0700, key 0600) and the proxy's memory.
class CertAuthority {
 public:
  // Loads DIR/ca.pem and DIR/ca.key, or creates both (EC P-256, 10 years) when neither exists;
  // then writes DIR/bundle.pem = `system_bundle` (when readable) + ca.pem. Errors: one line.
  static common::Result<std::unique_ptr<CertAuthority>> open(const std::string& dir, const std::string& system_bundle);

  // A certificate for `host` (SAN DNS:host), signed by the CA, valid 7 days, with the shared leaf
  // key. Cached per host (bounded); re-minted after a day. runs in: one thread.
  X509* leaf_for(const std::string& host);
  EVP_PKEY* leaf_key() const { return leaf_key_.get(); }
  X509* certificate() const { return cert_.get(); }
  const std::string& bundle_path() const { return bundle_path_; }

 private:
  struct Minted {
    X509Ptr cert;
    std::chrono::steady_clock::time_point made;
  };
  X509Ptr cert_;
  PkeyPtr key_;
  PkeyPtr leaf_key_;
  std::string bundle_path_;
  std::map<std::string, Minted> leaves_;
};

// OpenSSL's error queue as one line (then cleared); `fallback` when it is empty.
std::string openssl_error(const std::string& fallback);

}  // namespace cellgate::egress
