// SPDX-License-Identifier: BSD-3-Clause
// signed_link: HMAC-SHA256 link signatures and the gateway's link key.
#include "gateway/signed_link.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/assert.h"
#include "common/random.h"
#include "common/unique_fd.h"

namespace cellgate::gateway {

using common::Errc;
using common::make_error;

namespace {

constexpr size_t kMaxKeyFileBytes = 4096;
constexpr size_t kSignatureHex = 64;
constexpr size_t kMaxExpiresDigits = 18;  // < 2^63: no overflow

common::Error sys_error(const std::string& what, int err) {
  return make_error(Errc::kInternal, what + ": " + std::strerror(err), err);
}

common::Result<std::string> read_key(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return sys_error("open " + path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("stat " + path, errno);
  if (!S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMaxKeyFileBytes))
    return make_error(Errc::kBadRequest, path + ": the link key must be a regular file of at most 4096 bytes");
  std::string key(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::read(fd.get(), key.data() + got, key.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sys_error("read " + path, n < 0 ? errno : EIO);
    got += static_cast<size_t>(n);
  }
  if (key.size() < LinkSigner::kKeyBytes)
    return make_error(Errc::kBadRequest, path + ": the link key must hold at least 32 bytes");
  return key;
}

}  // namespace

LinkSigner::LinkSigner(std::string key) : key_(std::move(key)) { CELLGATE_ASSERT(key_.size() >= kKeyBytes); }

common::Result<LinkSigner> LinkSigner::load_or_create(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd) {
    unsigned char key[kKeyBytes];
    common::random_bytes(key, sizeof key);
    const bool written = ::write(fd.get(), key, sizeof key) == static_cast<ssize_t>(sizeof key) && ::fsync(fd.get()) == 0;
    OPENSSL_cleanse(key, sizeof key);
    if (!written) {
      const int err = errno;
      ::unlink(path.c_str());  // a short key must not be left for the next start to refuse
      return sys_error("write " + path, err);
    }
  } else if (errno != EEXIST) {
    return sys_error("create " + path, errno);
  }
  auto key = read_key(path);
  if (!key) return key.error();
  return LinkSigner(std::move(key.value()));
}

std::string LinkSigner::sign(std::string_view artifact, int64_t expires) const {
  const std::string text = "cellgate artifact link\n" + std::string(artifact) + "\n" + std::to_string(expires);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  unsigned char* ok = HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
                           reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &len);
  CELLGATE_ASSERT(ok != nullptr && len == 32);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(size_t{len} * 2, '\0');
  for (unsigned int i = 0; i < len; ++i) {
    hex[2 * i] = kHex[mac[i] >> 4];
    hex[2 * i + 1] = kHex[mac[i] & 0xf];
  }
  return hex;
}

LinkCheck LinkSigner::check(std::string_view artifact, std::string_view expires, std::string_view signature,
                            int64_t now_s) const {
  if (expires.empty() || expires.size() > kMaxExpiresDigits || signature.size() != kSignatureHex)
    return LinkCheck::kMalformed;
  int64_t when = 0;
  for (char c : expires) {
    if (c < '0' || c > '9') return LinkCheck::kMalformed;
    when = when * 10 + (c - '0');
  }
  for (char c : signature)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return LinkCheck::kMalformed;
  // "0042" and "42" would sign differently: only the canonical form was ever signed.
  if (std::to_string(when) != expires) return LinkCheck::kMalformed;
  const std::string expected = sign(artifact, when);
  if (CRYPTO_memcmp(expected.data(), signature.data(), kSignatureHex) != 0) return LinkCheck::kBadSignature;
  if (now_s >= when) return LinkCheck::kExpired;
  return LinkCheck::kValid;
}

}  // namespace cellgate::gateway
