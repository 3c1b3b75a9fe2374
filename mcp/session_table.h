// SPDX-License-Identifier: BSD-3-Clause
// session_table: the Mcp-Session-Id sessions of the streamable HTTP transport, bound to their token.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace cellgate::mcp {

struct McpSession;

// Thread-safe. Sessions are created by initialize and end on DELETE, after kIdle without use, or when
// their token has kMaxPerToken open and a new one needs room (that token's least recently used goes:
// one user's sessions never evict another's). A session answers only to the token that created it
// (compared by SHA-256 digest; the token itself is not kept).
class SessionTable {
 public:
  static constexpr size_t kMaxSessions = 16384;  // ~3 MiB; past it initialize is refused, nobody evicted
  static constexpr size_t kMaxPerToken = 16;
  static constexpr std::chrono::minutes kIdle{60};

  // Adds a session and returns its new id (128 random bits, hex); "" when the table holds kMaxSessions
  // of other tokens' sessions.
  std::string add(std::shared_ptr<McpSession> session, const std::string& token);
  // The session with this id, if it exists, is not expired and belongs to token; refreshes its last use.
  std::shared_ptr<McpSession> find(const std::string& id, const std::string& token);
  // Ends a session; false when there is none with this id for this token.
  bool remove(const std::string& id, const std::string& token);
  size_t size();

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Entry {
    std::shared_ptr<McpSession> session;
    Digest token_digest;
    std::chrono::steady_clock::time_point last_used;
  };
  static Digest digest(const std::string& token);
  void expire(std::chrono::steady_clock::time_point now);

  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

}  // namespace cellgate::mcp
