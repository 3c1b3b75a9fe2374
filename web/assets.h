// SPDX-License-Identifier: BSD-3-Clause
// assets: the pages' files (web/*.html, *.css, *.js), embedded into the binary at build time.
#pragma once

#include <span>
#include <string_view>

namespace cellgate::web {

struct Asset {
  std::string_view path;          // relative to the base URL: "", "admin", "static/app.js", ...
  std::string_view content_type;  // with charset
  std::string_view body;
  std::string_view etag;          // "\"<first 16 hex of SHA-256>\"", for If-None-Match
};

// The asset served at path (relative to the base URL, no leading '/'), or nullptr. "" (the user's
// page) and "admin" are the same page, which reads its role from the location. Thread-safe.
const Asset* find_asset(std::string_view path);
std::span<const Asset> all_assets();

// The headers each asset goes out with: the pages load only their own files, run no inline
// script, are framed by no one, and send no Referer (tokens never travel in URLs from them).
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
inline constexpr std::string_view kReferrerPolicy = "no-referrer";
inline constexpr std::string_view kCacheControl = "no-cache";  // revalidate with the ETag

}  // namespace cellgate::web
