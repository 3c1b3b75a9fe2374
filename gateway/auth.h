// SPDX-License-Identifier: BSD-3-Clause
// auth: who a request comes from: the user its token names (Authorization: token T or Bearer T, else
// ?token=T), with failed attempts rate-limited per address. Where the database is across a network
// (PostgreSQL), the token is looked up on the database thread, so that the io thread serves everyone
// else while the database answers, or does not.
#pragma once

#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "gateway/config.h"
#include "gateway/database_call.h"
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
  // db: the io thread's connection, which users reads through.
  Authenticator(state::UserStore& users, state::Database& db, const Config& config);
  // Looks tokens up on thread from now on, each within DatabaseCalls::kDeadline, charged to the asking
  // address's share of its queue. Null: on the io thread's own connection (SQLite: a local read).
  void look_up_on(state::DatabaseThread* thread) { lookups_.run_on(thread); }
  // Lookups waiting at once, from every address together: what unauthenticated clients may hold of the
  // database thread's queue (1024 jobs), so that the snapshot rows of kernels keep the rest. A lookup
  // whose wait ended leaves the queue with it (DatabaseThread::cancel): only one still running stays.
  static constexpr int kMaxLookups = 256;
  // The caller the request's token names; else nullopt, and refusal says why: 401; 429 with
  // Retry-After while the address is blocked for too many failures, or when its lookups fill its
  // share of the database thread's queue; 503 when the database cannot say in time. req, peer and
  // refusal must outlive the wait.
  boost::asio::awaitable<std::optional<Caller>> authenticate(const http::Request& req, const http::Peer& peer,
                                                             http::Response& refusal);
  // The token a request presents ("" when none).
  static std::string presented_token(const http::Request& req);

 private:
  state::UserStore& users_;
  std::string token_;          // --token, which a hand-picked one may be
  bool token_generated_;       // 256 random bits: cannot be guessed online
  state::AuthRateLimiter limiter_;
  DatabaseCalls lookups_;

  boost::asio::awaitable<common::Result<std::optional<state::User>>> look_up(const std::string& token,
                                                                            const std::string& ip);
};

}  // namespace cellgate::gateway
