// SPDX-License-Identifier: BSD-3-Clause
// pages_api: the user's page (/), the admin page (/admin) and their files (/static/...), from web/.
#include "gateway/api/pages_api.h"

#include "web/assets.h"

namespace cellgate::api {
namespace {

http::Reply serve(Call& call, const web::Asset* asset) {
  if (!asset) return reply(http::error_response(call.req, common::Errc::kNotFound, "not found"));
  const auto inm = call.req[http::field::if_none_match];
  const bool fresh = std::string_view(inm.data(), inm.size()) == asset->etag;
  http::Response res{fresh ? http::status::not_modified : http::status::ok, call.req.version()};
  res.set(http::field::content_type, std::string(asset->content_type));
  res.set(http::field::etag, std::string(asset->etag));
  res.set(http::field::cache_control, std::string(web::kCacheControl));
  res.set("Content-Security-Policy", std::string(web::kContentSecurityPolicy));
  res.set("Referrer-Policy", std::string(web::kReferrerPolicy));
  res.set("X-Content-Type-Options", "nosniff");
  res.keep_alive(call.req.keep_alive());
  if (!fresh) res.body() = std::string(asset->body);
  res.prepare_payload();
  return reply(std::move(res));
}

}  // namespace

boost::asio::awaitable<http::Reply> PagesApi::page(Call& call) {
  // "/" and "/admin" are one page, which reads its role from its location.
  co_return serve(call, web::find_asset(""));
}

boost::asio::awaitable<http::Reply> PagesApi::file(Call& call) {
  co_return serve(call, web::find_asset("static/" + call.param("file")));
}

}  // namespace cellgate::api
