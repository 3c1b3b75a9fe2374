// SPDX-License-Identifier: BSD-3-Clause
// pages_api: the user's page (/), the admin page (/admin) and their files (/static/...), from web/.
#pragma once

#include "gateway/api/route.h"

namespace cellgate::api {

// Public: the pages hold no data; they sign in with a token kept in sessionStorage and call the API.
class PagesApi {
 public:
  boost::asio::awaitable<http::Reply> page(Call& call);
  boost::asio::awaitable<http::Reply> file(Call& call);
};

}  // namespace cellgate::api
