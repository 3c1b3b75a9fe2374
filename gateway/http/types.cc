// SPDX-License-Identifier: BSD-3-Clause
// types: the request/response types and the one place errors become HTTP responses.
#include "gateway/http/types.h"

namespace cellgate::http {

using common::Errc;

http::status status_for(Errc code) {
  switch (code) {
    case Errc::kBadRequest: return http::status::bad_request;
    case Errc::kUnauthorized: return http::status::unauthorized;
    case Errc::kForbidden: return http::status::forbidden;
    case Errc::kNotFound: return http::status::not_found;
    case Errc::kConflict: return http::status::conflict;
    case Errc::kTooLarge: return http::status::payload_too_large;
    case Errc::kInsufficientStorage: return http::status::insufficient_storage;
    case Errc::kTooManyRequests: return http::status::too_many_requests;
    case Errc::kUnavailable: return http::status::service_unavailable;
    case Errc::kTimeout: return http::status::gateway_timeout;
    case Errc::kInternal: return http::status::internal_server_error;
  }
  return http::status::internal_server_error;
}

Response json_response(const Request& req, http::status status, const nlohmann::json& body) {
  Response res{status, req.version()};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(req.keep_alive());
  // Replace invalid UTF-8 rather than throw: a message may quote user input.
  res.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  res.prepare_payload();
  return res;
}

Response method_not_allowed(const Request& req, std::string message) {
  return json_response(req, http::status::method_not_allowed,
                       {{"reason", "Method Not Allowed"}, {"message", std::move(message)}});
}

Response empty_response(const Request& req, http::status status) {
  Response res{status, req.version()};
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

Response error_response(const Request& req, Errc code, std::string message) {
  auto status = status_for(code);
  return json_response(req, status,
                       {{"reason", std::string(http::obsolete_reason(status))}, {"message", std::move(message)}});
}

Response error_response(const Request& req, const common::Error& error) {
  return error_response(req, error.code, error.message);
}

std::string_view target_path(std::string_view target) {
  auto q = target.find('?');
  return q == std::string_view::npos ? target : target.substr(0, q);
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string query_param(std::string_view target, std::string_view name) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return "";
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1), true);
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  return "";
}

}  // namespace cellgate::http
