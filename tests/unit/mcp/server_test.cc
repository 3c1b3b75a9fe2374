// SPDX-License-Identifier: BSD-3-Clause
// server tests: MCP lifecycle, version negotiation, tools/list, tools/call errors and batches.
#include "mcp/server.h"

#include <catch2/catch.hpp>

#include "fake_rest_api.h"

namespace cellgate::mcp {
namespace {

using nlohmann::json;
using testing::FakeRestApi;

std::string init_message(const std::string& version, int id = 1) {
  return json{{"jsonrpc", "2.0"},
              {"id", id},
              {"method", "initialize"},
              {"params", {{"protocolVersion", version}, {"capabilities", json::object()},
                          {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}}
      .dump();
}

struct Fixture {
  std::shared_ptr<FakeRestApi> backend = std::make_shared<FakeRestApi>();
  McpServer server{backend};
  McpSession session;
  json send(const std::string& text) {
    auto r = server.handle(text, session, "tok");
    REQUIRE(r);
    return *r;
  }
  void init(const std::string& version = "2025-03-26") {
    send(init_message(version));
    CHECK_FALSE(server.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", session, "tok"));
  }
};

TEST_CASE("initialize negotiates the protocol version", "[mcp]") {
  for (const std::string v : {"2025-03-26", "2024-11-05"}) {
    Fixture f;
    json r = f.send(init_message(v));
    CHECK(r["id"] == 1);
    CHECK(r["result"]["protocolVersion"] == v);
    CHECK(r["result"]["capabilities"]["tools"].is_object());
    CHECK(r["result"]["serverInfo"]["name"] == "cellgate");
    CHECK(f.session.protocol_version == v);
  }
  Fixture future;
  CHECK(future.send(init_message("2099-01-01"))["result"]["protocolVersion"] == "2025-03-26");
}

TEST_CASE("lifecycle: only ping and initialize before initialize, and initialize once", "[mcp]") {
  Fixture f;
  CHECK(f.send(R"({"jsonrpc":"2.0","id":"p","method":"ping"})")["result"] == json::object());
  json early = f.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  CHECK(early["error"]["code"] == -32600);
  CHECK(f.send(R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{}})")["error"]["code"] == -32602);
  f.init();
  CHECK(f.session.client_ready);
  CHECK(f.send(init_message("2025-03-26", 4))["error"]["code"] == -32600);
  CHECK(f.send(R"({"jsonrpc":"2.0","id":5,"method":"resources/list"})")["error"]["code"] == -32601);
}

TEST_CASE("tools/list lists every tool with an object schema", "[mcp]") {
  Fixture f;
  f.init();
  json tools = f.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})")["result"]["tools"];
  std::vector<std::string> names;
  for (const auto& t : tools) {
    names.push_back(t["name"]);
    CHECK(t["description"].get<std::string>().size() > 40);
    CHECK(t["inputSchema"]["type"] == "object");
    CHECK(t["inputSchema"]["required"].is_array());
    for (const auto& r : t["inputSchema"]["required"]) CHECK(t["inputSchema"]["properties"].contains(r));
  }
  CHECK(names == std::vector<std::string>{"list_kernels", "start_kernel", "execute", "read", "write", "edit",
                                          "process", "snapshot", "restore", "list_snapshots", "journal",
                                          "publish_artifact"});
  CHECK(f.send(R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"x"}})")["error"]["code"] == -32602);
}

TEST_CASE("tools/call: unknown tools and bad arguments are -32602, the backend is not called", "[mcp]") {
  Fixture f;
  f.init();
  auto call = [&](const json& params) {
    return f.send(json{{"jsonrpc", "2.0"}, {"id", 9}, {"method", "tools/call"}, {"params", params}}.dump());
  };
  CHECK(call({{"name", "rm_rf"}})["error"]["code"] == -32602);
  CHECK(call({{"arguments", json::object()}})["error"]["code"] == -32602);
  CHECK(call({{"name", "execute"}, {"arguments", {{"kernel_id", "k"}}}})["error"]["code"] == -32602);
  CHECK(call({{"name", "execute"}, {"arguments", {{"kernel_id", "k"}, {"code", 1}}}})["error"]["code"] == -32602);
  CHECK(call({{"name", "execute"}, {"arguments", {{"kernel_id", "k"}, {"code", "1"}, {"timeout", -1}}}})["error"]["code"] ==
        -32602);
  CHECK(call({{"name", "execute"}, {"arguments", {{"kernel_id", "k"}, {"code", "1"}, {"kernelId", "k"}}}})["error"]["code"] ==
        -32602);
  CHECK(call({{"name", "edit"}, {"arguments", {{"kernel_id", "k"}, {"path", "a"}, {"diff", "d"}, {"old_string", "x"}}}})
            ["error"]["code"] == -32602);
  CHECK(call({{"name", "process"}, {"arguments", {{"kernel_id", "k"}, {"command", "ls"}, {"args", {1}}}}})["error"]["code"] ==
        -32602);
  CHECK(call({{"name", "list_kernels"}, {"arguments", json::array()}})["error"]["code"] == -32602);
  CHECK(f.backend->seen().empty());
}

TEST_CASE("tools/call passes the caller's token to the backend", "[mcp]") {
  Fixture f;
  f.init();
  f.backend->on("GET api/kernels", 200, json::array());
  auto r = f.server.handle(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_kernels"}})",
                           f.session, "alice-token");
  REQUIRE(r);
  CHECK((*r)["result"]["isError"] == false);
  REQUIRE(f.backend->seen().size() == 1);
  CHECK(f.backend->seen()[0].token == "alice-token");
}

TEST_CASE("batches: one reply per request, none for notifications, initialize refused inside", "[mcp]") {
  Fixture f;
  f.init();
  json r = f.send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},
                      {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}},
                      {"jsonrpc":"2.0","id":2,"method":"nope"},
                      {"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-03-26"}},
                      42])");
  REQUIRE(r.is_array());
  REQUIRE(r.size() == 4);
  CHECK(r[0]["id"] == 1);
  CHECK(r[0].contains("result"));
  CHECK(r[1]["error"]["code"] == -32601);
  CHECK(r[2]["error"]["code"] == -32600);
  CHECK(r[3]["error"]["code"] == -32600);
  CHECK_FALSE(f.server.handle(R"([{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":1,"result":{}}])", f.session, "t"));
}

TEST_CASE("oversized and unparsable input get errors with a null id", "[mcp]") {
  Fixture f;
  json r = f.send(std::string(kMaxMessageBytes + 1, ' '));
  CHECK(r["error"]["code"] == -32600);
  CHECK(r["id"].is_null());
  CHECK(f.send("nonsense")["error"]["code"] == -32700);
}

}  // namespace
}  // namespace cellgate::mcp
