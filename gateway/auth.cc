// SPDX-License-Identifier: BSD-3-Clause
// auth: who a request comes from.
#include "gateway/auth.h"

#include "common/address_bucket.h"
#include "common/log.h"

namespace cellgate::gateway {

using common::Errc;
using boost::asio::awaitable;

Authenticator::Authenticator(state::UserStore& users, state::Database& db, const Config& config)
    : users_(users), token_(config.token), token_generated_(config.token_generated),
      limiter_(state::AuthRateLimiter::Options{config.auth_failures_per_minute, std::chrono::seconds(60),
                                               std::chrono::seconds(60), 10000}),
      lookups_(db, kMaxLookups) {}

std::string Authenticator::presented_token(const http::Request& req) {
  std::string_view auth(req[http::field::authorization].data(), req[http::field::authorization].size());
  if (auth.starts_with("token ")) return std::string(auth.substr(6));
  if (auth.starts_with("Bearer ")) return std::string(auth.substr(7));
  return http::query_param(std::string_view(req.target().data(), req.target().size()), "token");
}

awaitable<common::Result<std::optional<state::User>>> Authenticator::look_up(const std::string& token,
                                                                             const std::string& ip) {
  if (token.empty()) co_return std::optional<state::User>();
  const std::string tenant = "auth " + ip;
  auto lookup = [store = users_, token](state::Database& db) { return store.with_connection(db).authenticate(token); };
  co_return co_await lookups_.call<std::optional<state::User>>(tenant, lookup);
}

awaitable<std::optional<Caller>> Authenticator::authenticate(const http::Request& req, const http::Peer& peer,
                                                             http::Response& refusal) {
  const std::string token = presented_token(req);
  // Budgets are charged per IPv4 address and per IPv6 /64 (address_bucket.h); logs name the address.
  const std::string bucket = common::address_bucket(peer.ip);
  // The database could not say whose token it is (PostgreSQL unreachable or slow): 503, and no failure
  // is counted against the client, whose token may well be good. Its lookups past its share of the
  // database thread's queue: 429.
  auto lookup = co_await look_up(token, bucket);
  if (!lookup) {
    const Errc code = lookup.error().code;
    if (code == Errc::kTooManyRequests) {
      refusal = http::json_response(req, http::status::too_many_requests,
                                    {{"reason", "Too Many Requests"},
                                     {"message", "too many requests from this address wait for the database; retry later"}});
      refusal.set(http::field::retry_after, "1");
      co_return std::nullopt;
    }
    refusal = http::error_response(req, code == Errc::kUnavailable ? Errc::kUnavailable : Errc::kInternal,
                                   "cannot check the token: " + lookup.error().message);
    co_return std::nullopt;
  }
  auto& user = lookup.value();
  if (int wait = limiter_.retry_after(bucket); wait > 0) {
    // The block is there to stop online guessing, and a token the gateway generated (256 bits: every
    // `cellgate user add` token, and --token when not given) cannot be guessed online: a valid one
    // still gets in, so that on a shared address (a JupyterHub node, a NAT) one client's failures do
    // not lock everyone else out. A hand-picked --token, however long, may be a guessable phrase: it
    // stays behind the block.
    if (user && (token_generated_ || token != token_)) co_return Caller{std::move(*user), peer};
    refusal = http::json_response(req, http::status::too_many_requests,
                                  {{"reason", "Too Many Requests"},
                                   {"message", "too many failed authentications; retry later"}});
    refusal.set(http::field::retry_after, std::to_string(wait));
    co_return std::nullopt;
  }
  if (!user) {
    if (limiter_.record_failure(bucket)) common::log_warn("ip={} msg=\"authentication failures; blocking\"", peer.ip);
    refusal = http::error_response(req, Errc::kUnauthorized, "missing or invalid token");
    co_return std::nullopt;
  }
  co_return Caller{std::move(*user), peer};
}

}  // namespace cellgate::gateway
