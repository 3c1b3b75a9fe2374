// SPDX-License-Identifier: BSD-3-Clause
// session_table: the Mcp-Session-Id sessions of the streamable HTTP transport, bound to their token.
#include "mcp/session_table.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/assert.h"
#include "common/random.h"

namespace cellgate::mcp {

SessionTable::Digest SessionTable::digest(const std::string& token) {
  Digest d{};
  unsigned int n = 0;
  const int rc = EVP_Digest(token.data(), token.size(), d.data(), &n, EVP_sha256(), nullptr);
  CELLGATE_ASSERT(rc == 1 && n == d.size());
  return d;
}

void SessionTable::expire(std::chrono::steady_clock::time_point now) {
  for (auto it = entries_.begin(); it != entries_.end();)
    it = now - it->second.last_used > kIdle ? entries_.erase(it) : std::next(it);
}

std::string SessionTable::add(std::shared_ptr<McpSession> session, const std::string& token) {
  auto now = std::chrono::steady_clock::now();
  std::string id = common::random_hex(16);
  Entry entry{std::move(session), digest(token), now};
  std::lock_guard lock(mu_);
  expire(now);
  auto oldest = entries_.end();
  size_t own = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.token_digest != entry.token_digest) continue;
    ++own;
    if (oldest == entries_.end() || it->second.last_used < oldest->second.last_used) oldest = it;
  }
  if (own >= kMaxPerToken) {
    entries_.erase(oldest);
  } else if (entries_.size() >= kMaxSessions) {
    return "";
  }
  entries_.emplace(id, std::move(entry));
  return id;
}

std::shared_ptr<McpSession> SessionTable::find(const std::string& id, const std::string& token) {
  auto d = digest(token);
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return nullptr;
  if (now - it->second.last_used > kIdle) {
    entries_.erase(it);
    return nullptr;
  }
  if (CRYPTO_memcmp(d.data(), it->second.token_digest.data(), d.size()) != 0) return nullptr;
  it->second.last_used = now;
  return it->second.session;
}

bool SessionTable::remove(const std::string& id, const std::string& token) {
  auto d = digest(token);
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || CRYPTO_memcmp(d.data(), it->second.token_digest.data(), d.size()) != 0) return false;
  entries_.erase(it);
  return true;
}

size_t SessionTable::size() {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace cellgate::mcp
