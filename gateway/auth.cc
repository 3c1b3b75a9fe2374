// SPDX-License-Identifier: BSD-3-Clause
// auth: who a request comes from.
#include "gateway/auth.h"

#include "common/log.h"

namespace cellgate::gateway {

using common::Errc;

Authenticator::Authenticator(state::UserStore& users, const Config& config)
    : users_(users), token_(config.token), token_generated_(config.token_generated),
      limiter_(state::AuthRateLimiter::Options{config.auth_failures_per_minute, std::chrono::seconds(60),
                                               std::chrono::seconds(60), 10000}) {}

std::string Authenticator::presented_token(const http::Request& req) {
  std::string_view auth(req[http::field::authorization].data(), req[http::field::authorization].size());
  if (auth.starts_with("token ")) return std::string(auth.substr(6));
  if (auth.starts_with("Bearer ")) return std::string(auth.substr(7));
  return http::query_param(std::string_view(req.target().data(), req.target().size()), "token");
}

std::optional<Caller> Authenticator::authenticate(const http::Request& req, const http::Peer& peer,
                                                  http::Response& refusal) {
  const std::string token = presented_token(req);
  // The database could not say whose token it is (PostgreSQL unreachable): 503, and no failure is
  // counted against the client, whose token may well be good.
  auto lookup = users_.authenticate(token);
  if (!lookup) {
    refusal = http::error_response(req, lookup.error().code == Errc::kUnavailable ? Errc::kUnavailable : Errc::kInternal,
                                   "cannot check the token: " + lookup.error().message);
    return std::nullopt;
  }
  auto& user = lookup.value();
  if (int wait = limiter_.retry_after(peer.ip); wait > 0) {
    // The block is there to stop online guessing, and a token the gateway generated (256 bits: every
    // `cellgate user add` token, and --token when not given) cannot be guessed online: a valid one
    // still gets in, so that on a shared address (a JupyterHub node, a NAT) one client's failures do
    // not lock everyone else out. A hand-picked --token, however long, may be a guessable phrase: it
    // stays behind the block.
    if (user && (token_generated_ || token != token_)) return Caller{std::move(*user), peer};
    refusal = http::json_response(req, http::status::too_many_requests,
                                  {{"reason", "Too Many Requests"},
                                   {"message", "too many failed authentications; retry later"}});
    refusal.set(http::field::retry_after, std::to_string(wait));
    return std::nullopt;
  }
  if (!user) {
    if (limiter_.record_failure(peer.ip)) common::log_warn("ip={} msg=\"authentication failures; blocking\"", peer.ip);
    refusal = http::error_response(req, Errc::kUnauthorized, "missing or invalid token");
    return std::nullopt;
  }
  return Caller{std::move(*user), peer};
}

}  // namespace cellgate::gateway
