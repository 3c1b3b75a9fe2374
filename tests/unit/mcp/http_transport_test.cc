// SPDX-License-Identifier: BSD-3-Clause
// http_transport tests: Streamable HTTP sessions, status codes and headers (MCP 2025-03-26).
#include "mcp/http_transport.h"

#include <catch2/catch.hpp>

#include "fake_rest_api.h"

namespace cellgate::mcp {
namespace {

using nlohmann::json;
using testing::FakeRestApi;

constexpr const char* kInit =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

std::string header(const McpHttpResult& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

struct Fixture {
  std::shared_ptr<FakeRestApi> backend = std::make_shared<FakeRestApi>();
  McpServer server{backend};
  McpHttpResult post(const std::string& body, const std::string& session = "", const std::string& token = "alice") {
    return handle_mcp_http(server, "POST", {session, "application/json", "application/json, text/event-stream"}, body,
                           token);
  }
  std::string open(const std::string& token = "alice") {
    auto r = post(kInit, "", token);
    REQUIRE(r.status == 200);
    std::string id = header(r, "Mcp-Session-Id");
    REQUIRE(id.size() == 32);
    return id;
  }
};

TEST_CASE("initialize issues a session id and later requests use it", "[mcp]") {
  Fixture f;
  auto init = f.post(kInit);
  CHECK(init.status == 200);
  CHECK(header(init, "Content-Type") == "application/json");
  CHECK(json::parse(init.body)["result"]["protocolVersion"] == "2025-03-26");
  std::string id = header(init, "Mcp-Session-Id");
  REQUIRE(!id.empty());

  auto note = f.post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", id);
  CHECK(note.status == 202);
  CHECK(note.body.empty());

  auto list = f.post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})", id);
  CHECK(list.status == 200);
  CHECK(json::parse(list.body)["result"]["tools"].size() == 12);

  auto batch = f.post(R"([{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}])", id);
  CHECK(batch.status == 200);
  CHECK(json::parse(batch.body).size() == 2);
  CHECK(f.server.sessions().size() == 1);
}

TEST_CASE("session ids are required, checked, bound to the token and ended by DELETE", "[mcp]") {
  Fixture f;
  std::string id = f.open("alice");
  constexpr const char* kPing = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";
  CHECK(f.post(kPing).status == 400);
  CHECK(f.post(kPing, "0123456789abcdef0123456789abcdef").status == 404);
  CHECK(f.post(kPing, id, "mallory").status == 404);
  CHECK(handle_mcp_http(f.server, "DELETE", {id, "", ""}, "", "mallory").status == 404);
  CHECK(f.post(kPing, id, "alice").status == 200);
  CHECK(handle_mcp_http(f.server, "DELETE", {id, "", ""}, "", "alice").status == 200);
  CHECK(f.post(kPing, id, "alice").status == 404);
  CHECK(handle_mcp_http(f.server, "DELETE", {"", "", ""}, "", "alice").status == 400);
}

TEST_CASE("each initialize opens a distinct session", "[mcp]") {
  Fixture f;
  CHECK(f.open() != f.open());
  CHECK(f.server.sessions().size() == 2);
}

TEST_CASE("GET and other methods get 405 with Allow", "[mcp]") {
  Fixture f;
  for (const char* m : {"GET", "PUT", "PATCH"}) {
    auto r = handle_mcp_http(f.server, m, {}, "", "alice");
    CHECK(r.status == 405);
    CHECK(header(r, "Allow") == "POST, DELETE");
  }
}

TEST_CASE("bad bodies and headers", "[mcp]") {
  Fixture f;
  auto parse = f.post("{oops");
  CHECK(parse.status == 400);
  CHECK(json::parse(parse.body)["error"]["code"] == -32700);
  CHECK(handle_mcp_http(f.server, "POST", {"", "text/plain", ""}, kInit, "a").status == 415);
  CHECK(handle_mcp_http(f.server, "POST", {"", "application/json; charset=utf-8", "text/event-stream"}, kInit, "a").status ==
        406);
  CHECK(handle_mcp_http(f.server, "POST", {"", "application/json; charset=utf-8", ""}, kInit, "a").status == 200);
  CHECK(f.post(std::string(kMaxMessageBytes + 1, ' ')).status == 413);
  auto refused = f.post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
  CHECK(refused.status == 400);
  CHECK(header(refused, "Mcp-Session-Id").empty());
  std::string id = f.open();
  auto bad_note = f.post(R"({"jsonrpc":"1.0","method":"x"})", id);
  CHECK(bad_note.status == 400);
}

TEST_CASE("tools/call over HTTP runs with the caller's token", "[mcp]") {
  Fixture f;
  f.backend->on("GET api/kernels", 200, json::array());
  std::string id = f.open("bob");
  auto r = f.post(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_kernels","arguments":{}}})", id, "bob");
  CHECK(r.status == 200);
  CHECK(json::parse(r.body)["result"]["isError"] == false);
  REQUIRE(f.backend->seen().size() == 1);
  CHECK(f.backend->seen()[0].token == "bob");
}

}  // namespace
}  // namespace cellgate::mcp
