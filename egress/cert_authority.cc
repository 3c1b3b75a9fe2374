// SPDX-License-Identifier: BSD-3-Clause
// cert_authority: the interception CA (loaded or created on disk) and the leaf certificates it mints.
#include "egress/cert_authority.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "common/unique_fd.h"

namespace cellgate::egress {
namespace {

using common::Errc;
using common::make_error;

constexpr size_t kMaxLeaves = 1024;
constexpr auto kLeafRefresh = std::chrono::hours(24);
constexpr long kLeafDays = 7;
constexpr long kCaDays = 3650;

struct BioFree {
  void operator()(BIO* b) const { BIO_free_all(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

PkeyPtr make_ec_key() { return PkeyPtr(EVP_EC_gen("P-256")); }

bool add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

bool random_serial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[0] &= 0x7f;  // a positive INTEGER
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  bool ok = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  BN_free(bn);
  return ok;
}

// A certificate for `key`'s public half with CN `cn`, signed by (issuer, issuer_key); self-signed
// when issuer is null. Back-dated one hour for clocks that lag ours.
X509Ptr make_cert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key, long days, bool ca,
                  const std::string& san) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1 || !random_serial(cert.get())) return nullptr;
  X509_NAME* name = X509_get_subject_name(cert.get());
  // CN holds at most 64 bytes (RFC 5280 ub-common-name); the SAN is what clients check anyway.
  if (cn.size() <= 64 && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                                    reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0) != 1)
    return nullptr;
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("cellgate egress"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * 86400);
  if (X509_set_pubkey(cert.get(), key) != 1) return nullptr;
  X509* signer = issuer ? issuer : cert.get();
  bool ok = true;
  if (ca) {
    ok = add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") &&
         add_ext(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign") &&
         add_ext(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    ok = add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE") &&
         add_ext(cert.get(), signer, NID_key_usage, "critical,digitalSignature") &&
         add_ext(cert.get(), signer, NID_ext_key_usage, "serverAuth") &&
         add_ext(cert.get(), signer, NID_subject_key_identifier, "hash") &&
         add_ext(cert.get(), signer, NID_authority_key_identifier, "keyid:always") &&
         add_ext(cert.get(), signer, NID_subject_alt_name, san.c_str());
  }
  if (!ok || X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) <= 0) return nullptr;
  return cert;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// Writes through a temporary file and rename(2), so a crash never leaves half a key.
bool write_file(const std::string& path, const std::string& data, mode_t mode) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  common::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd) return false;
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return ::fsync(fd.get()) == 0 && ::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string pem_of(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string pem_of(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

std::string openssl_error(const std::string& fallback) {
  unsigned long e = ERR_peek_last_error();
  std::string why = fallback;
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    why = buf;
  }
  ERR_clear_error();
  return why;
}

common::Result<std::unique_ptr<CertAuthority>> CertAuthority::open(const std::string& dir,
                                                                     const std::string& system_bundle) {
  auto ca = std::unique_ptr<CertAuthority>(new CertAuthority());
  if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST)
    return make_error(Errc::kInternal, "--ca-dir: cannot create " + dir, errno);
  const std::string cert_path = dir + "/ca.pem", key_path = dir + "/ca.key";
  std::string cert_pem, key_pem;
  bool have_cert = read_file(cert_path, cert_pem), have_key = read_file(key_path, key_pem);
  if (have_cert != have_key)
    return make_error(Errc::kBadRequest, "--ca-dir: " + dir + " has only one of ca.pem and ca.key");
  if (have_cert) {
    struct stat st {};
    if (::stat(key_path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      return make_error(Errc::kBadRequest, "--ca-dir: " + key_path + " is readable by others (chmod 600 it)");
    BioPtr cb(BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
    BioPtr kb(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
    ca->cert_.reset(PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr));
    ca->key_.reset(PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr));
    if (!ca->cert_ || !ca->key_) return make_error(Errc::kBadRequest, "--ca-dir: " + openssl_error("unreadable ca.pem or ca.key"));
    if (X509_check_private_key(ca->cert_.get(), ca->key_.get()) != 1)
      return make_error(Errc::kBadRequest, "--ca-dir: ca.key is not the key of ca.pem: " + openssl_error(""));
  } else {
    ca->key_ = make_ec_key();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    if (ca->key_) ca->cert_ = make_cert(ca->key_.get(), std::string("cellgate egress CA ") + host, nullptr, nullptr, kCaDays, true, "");
    if (!ca->cert_) return make_error(Errc::kInternal, "cannot create the CA: " + openssl_error("unknown OpenSSL error"));
    if (!write_file(key_path, pem_of(ca->key_.get()), 0600) || !write_file(cert_path, pem_of(ca->cert_.get()), 0644))
      return make_error(Errc::kInternal, "--ca-dir: cannot write the CA into " + dir, errno);
  }
  ca->leaf_key_ = make_ec_key();
  if (!ca->leaf_key_) return make_error(Errc::kInternal, "cannot create the leaf key: " + openssl_error(""));
  std::string bundle;
  read_file(system_bundle, bundle);
  if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
  bundle += pem_of(ca->cert_.get());
  ca->bundle_path_ = dir + "/bundle.pem";
  if (!write_file(ca->bundle_path_, bundle, 0644))
    return make_error(Errc::kInternal, "--ca-dir: cannot write " + ca->bundle_path_, errno);
  return ca;
}

X509* CertAuthority::leaf_for(const std::string& host) {
  const auto now = std::chrono::steady_clock::now();
  if (auto it = leaves_.find(host); it != leaves_.end() && now - it->second.made < kLeafRefresh) return it->second.cert.get();
  if (leaves_.size() >= kMaxLeaves) {
    auto oldest = leaves_.begin();
    for (auto it = leaves_.begin(); it != leaves_.end(); ++it) {
      if (it->second.made < oldest->second.made) oldest = it;
    }
    leaves_.erase(oldest);
  }
  X509Ptr cert = make_cert(leaf_key_.get(), host, cert_.get(), key_.get(), kLeafDays, false, "DNS:" + host);
  if (!cert) {
    ERR_clear_error();
    return nullptr;
  }
  auto& slot = leaves_[host];
  slot = Minted{std::move(cert), now};
  return slot.cert.get();
}

}  // namespace cellgate::egress
