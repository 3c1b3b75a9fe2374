// SPDX-License-Identifier: BSD-3-Clause
// types: the request/response types and the one place errors become HTTP responses.
#pragma once

#include <string>
#include <string_view>

#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"

// cellgate::http is Beast's HTTP plus our transport: every folder names status, verb and field as
// http::status and so on, whether it speaks of Beast's types or of ours (the using-directive is
// inside our namespace only, so nothing leaks into the global one).
namespace cellgate::http {

using namespace boost::beast::http;  // NOLINT(google-build-using-namespace)
using Request = request<string_body>;
using Response = response<string_body>;

// A JSON response with the request's HTTP version and keep-alive.
Response json_response(const Request& req, http::status status, const nlohmann::json& body);
// 204 No Content.
Response empty_response(const Request& req, http::status status = http::status::no_content);
// {"reason","message"} with the status the error kind maps to. The only Error → HTTP mapping.
Response error_response(const Request& req, const common::Error& error);
Response error_response(const Request& req, common::Errc code, std::string message);
http::status status_for(common::Errc code);
// 405 with the {"reason","message"} body (no Errc maps to it: it is about the route, not the request).
Response method_not_allowed(const Request& req, std::string message = "method not allowed on this resource");

// Query parameter value ("" when absent), percent-decoded.
std::string query_param(std::string_view target, std::string_view name);
// The path part of a request target, without the query.
std::string_view target_path(std::string_view target);
// Decodes %XX escapes; '+' becomes a space only in query strings.
std::string percent_decode(std::string_view s, bool plus_is_space = false);

}  // namespace cellgate::http
