// SPDX-License-Identifier: BSD-3-Clause
// http_client tests: URL parsing, path escaping, and one real exchange with a loopback HTTP server.
#include "client/http_client.h"

#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>

namespace cellgate::client {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;
using tcp = asio::ip::tcp;

TEST_CASE("parse_base_url", "[client]") {
  auto u = parse_base_url("http://127.0.0.1:8888");
  REQUIRE(u);
  CHECK(u->host == "127.0.0.1");
  CHECK(u->port == "8888");
  CHECK(u->base == "/");
  auto b = parse_base_url("http://localhost/gw/?token=x");
  REQUIRE(b);
  CHECK(b->port == "80");
  CHECK(b->base == "/gw/");
  auto v6 = parse_base_url("http://[::1]:9/x");
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->base == "/x/");
  CHECK_FALSE(parse_base_url("https://example.org/"));
  CHECK_FALSE(parse_base_url("ftp://x"));
  CHECK_FALSE(parse_base_url("http://:80/"));
  CHECK_FALSE(parse_base_url("http://h:99999/"));
  CHECK_FALSE(parse_base_url("http://h:8a/"));
  CHECK_FALSE(parse_base_url("http://user:pw@h/"));
}

TEST_CASE("escape_segment keeps unreserved characters only", "[client]") {
  CHECK(escape_segment("abc-1.2_~") == "abc-1.2_~");
  CHECK(escape_segment("../x y") == "..%2Fx%20y");
  CHECK(escape_segment("ü?#") == "%C3%BC%3F%23");
}

TEST_CASE("a call sends the token and JSON body and reads the JSON answer", "[client]") {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto port = acceptor.local_endpoint().port();
  http::request<http::string_body> seen;
  std::thread server([&] {
    tcp::socket socket(io);
    acceptor.accept(socket);
    boost::beast::flat_buffer buffer;
    http::read(socket, buffer, seen);
    http::response<http::string_body> res{http::status::conflict, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = R"({"reason":"Conflict","message":"nope"})";
    res.prepare_payload();
    http::write(socket, res);
  });
  HttpClient backend(parse_base_url("http://127.0.0.1:" + std::to_string(port) + "/base").value());
  auto reply = backend.call({"POST", "api/kernels/k/tools/edit", {{"path", "a"}}, std::chrono::seconds(10)}, "s3cret");
  server.join();
  REQUIRE(reply);
  CHECK(reply->status == 409);
  CHECK(reply->body["message"] == "nope");
  CHECK(seen.method() == http::verb::post);
  CHECK(seen.target() == "/base/api/kernels/k/tools/edit");
  CHECK(seen[http::field::authorization] == "token s3cret");
  CHECK(json::parse(seen.body()) == json{{"path", "a"}});
}

TEST_CASE("a refused connection is an error naming the server", "[client]") {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const auto port = acceptor.local_endpoint().port();
  acceptor.close();  // nothing listens there now
  HttpClient backend(parse_base_url("http://127.0.0.1:" + std::to_string(port)).value());
  auto reply = backend.call({"GET", "api/kernels", nullptr, std::chrono::seconds(10)}, "t");
  REQUIRE_FALSE(reply);
  CHECK(reply.error().message.find("unreachable") != std::string::npos);
}

}  // namespace
}  // namespace cellgate::client
