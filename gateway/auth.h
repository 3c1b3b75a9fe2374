// SPDX-License-Identifier: BSD-3-Clause
// auth: who a request comes from: the user its token names (Authorization: token T or Bearer T, else
// ?token=T), with failed attempts rate-limited per address.
#pragma once

#include <optional>
#include <string>

#include "gateway/config.h"
#include "gateway/http/handler.h"
#include "state/rate_limiter.h"
#include "state/users.h"

namespace cellgate::gateway {

// Who is asking: the authenticated user and the connection.
struct Caller {
  state::User user;
  http::Peer peer;  // its address and socket (peer.gone(): whether the client left meanwhile)
};

// Io thread only.
class Authenticator {
 public:
  Authenticator(state::UserStore& users, const Config& config);
  // The caller the request's token names; else nullopt, and refusal says why: 401, or 429 with
  // Retry-After while the address is blocked for too many failures.
  std::optional<Caller> authenticate(const http::Request& req, const http::Peer& peer, http::Response& refusal);
  // The token a request presents ("" when none).
  static std::string presented_token(const http::Request& req);

 private:
  state::UserStore& users_;
  std::string token_;          // --token, which a hand-picked one may be
  bool token_generated_;       // 256 random bits: cannot be guessed online
  state::AuthRateLimiter limiter_;
};

}  // namespace cellgate::gateway
