// SPDX-License-Identifier: BSD-3-Clause
// http_relay: absolute-form targets, hop-by-hop headers, refusal answers.
#include "egress/http_relay.h"

#include <catch2/catch.hpp>

using namespace cellgate::egress;

TEST_CASE("absolute-form targets split into authority and origin-form", "[egress]") {
  std::string a, o;
  CHECK(split_absolute_form("http://pypi.test:8080/simple/x/?q=1#frag", a, o));
  CHECK(a == "pypi.test:8080");
  CHECK(o == "/simple/x/?q=1");
  CHECK(split_absolute_form("HTTP://h.test", a, o));
  CHECK(o == "/");
  CHECK(split_absolute_form("http://h.test?x", a, o));
  CHECK(o == "/?x");
  CHECK_FALSE(split_absolute_form("/path", a, o));
  CHECK_FALSE(split_absolute_form("https://h.test/", a, o));
  CHECK_FALSE(split_absolute_form("http://user:pw@h.test/", a, o));
  CHECK_FALSE(split_absolute_form("http:///x", a, o));
}

TEST_CASE("hop-by-hop headers go, Expect is answered by the proxy", "[egress]") {
  http::request_header<> h;
  h.set(http::field::connection, "keep-alive, X-Secret-Hop");
  h.set("X-Secret-Hop", "1");
  h.set("Proxy-Authorization", "Basic x");
  h.set("Proxy-Connection", "keep-alive");
  h.set(http::field::keep_alive, "timeout=5");
  h.set(http::field::expect, "100-continue");
  h.set(http::field::upgrade, "websocket");
  h.set("X-Keep", "yes");
  CHECK(strip_hop_by_hop(h, false));
  for (const char* gone : {"Connection", "X-Secret-Hop", "Proxy-Authorization", "Proxy-Connection", "Keep-Alive", "Expect", "Upgrade"}) {
    INFO(gone);
    CHECK(h.find(gone) == h.end());
  }
  CHECK(h["X-Keep"] == "yes");
  http::request_header<> u;
  u.set(http::field::connection, "Upgrade");
  u.set(http::field::upgrade, "websocket");
  CHECK_FALSE(strip_hop_by_hop(u, true));
  CHECK(u[http::field::upgrade] == "websocket");
  CHECK(u[http::field::connection] == "upgrade");
}

TEST_CASE("a refusal carries its reason in the status line and the body", "[egress]") {
  auto r = refusal_response(http::status::forbidden, "evil.com is not in the allowlist\r\nX-Injected: 1");
  CHECK(r.result_int() == 403);
  CHECK(r.reason() == "cellgate egress: evil.com is not in the allowlist??X-Injected: 1");
  CHECK(r.body() == "cellgate egress: evil.com is not in the allowlist??X-Injected: 1\n");
  CHECK(r[http::field::connection] == "close");
  CHECK(r["X-Cellgate-Egress"] == "refused");
}
