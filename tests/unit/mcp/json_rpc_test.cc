// SPDX-License-Identifier: BSD-3-Clause
// json_rpc tests: classification of requests, notifications, responses and malformed messages; batches.
#include "mcp/json_rpc.h"

#include <catch2/catch.hpp>

namespace cellgate::mcp {
namespace {

using nlohmann::json;

int error_code(const json& response) { return response.at("error").at("code").get<int>(); }

TEST_CASE("requests, notifications and responses are told apart", "[mcp]") {
  auto req = classify(json::parse(R"({"jsonrpc":"2.0","id":7,"method":"ping"})"));
  CHECK(req.kind == MessageKind::kRequest);
  CHECK(req.id == 7);
  CHECK(req.method == "ping");
  CHECK(req.params == json::object());

  auto note = classify(json::parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  CHECK(note.kind == MessageKind::kNotification);

  auto resp = classify(json::parse(R"({"jsonrpc":"2.0","id":"a","result":{}})"));
  CHECK(resp.kind == MessageKind::kResponse);
  CHECK(resp.id == "a");
}

TEST_CASE("malformed messages become -32600/-32602 errors, keeping a readable id", "[mcp]") {
  auto no_version = classify(json::parse(R"({"id":1,"method":"ping"})"));
  REQUIRE(no_version.kind == MessageKind::kInvalid);
  CHECK(error_code(no_version.error) == -32600);
  CHECK(no_version.error["id"] == 1);

  auto wrong_version = classify(json::parse(R"({"jsonrpc":"1.0","id":1,"method":"ping"})"));
  CHECK(error_code(wrong_version.error) == -32600);

  auto null_id = classify(json::parse(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"));
  CHECK(error_code(null_id.error) == -32600);
  CHECK(null_id.error["id"].is_null());

  auto float_id = classify(json::parse(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})"));
  CHECK(error_code(float_id.error) == -32600);

  auto method_type = classify(json::parse(R"({"jsonrpc":"2.0","id":"x","method":3})"));
  CHECK(error_code(method_type.error) == -32600);
  CHECK(method_type.error["id"] == "x");

  auto params_array = classify(json::parse(R"({"jsonrpc":"2.0","id":2,"method":"ping","params":[1]})"));
  CHECK(error_code(params_array.error) == -32602);

  auto not_object = classify(json(5));
  CHECK(error_code(not_object.error) == -32600);

  auto no_method = classify(json::parse(R"({"jsonrpc":"2.0","id":3})"));
  CHECK(error_code(no_method.error) == -32600);
}

TEST_CASE("payloads: parse errors, batches and their bounds", "[mcp]") {
  auto bad = parse_payload("{not json");
  REQUIRE(bad.parse_error);
  CHECK(error_code(*bad.parse_error) == -32700);
  CHECK((*bad.parse_error)["id"].is_null());

  auto empty = parse_payload("[]");
  REQUIRE(empty.parse_error);
  CHECK(error_code(*empty.parse_error) == -32600);

  auto batch = parse_payload(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"},1])");
  CHECK(batch.batch);
  REQUIRE(batch.messages.size() == 3);
  CHECK(batch.messages[0].kind == MessageKind::kRequest);
  CHECK(batch.messages[1].kind == MessageKind::kNotification);
  CHECK(batch.messages[2].kind == MessageKind::kInvalid);

  json big = json::array();
  for (size_t i = 0; i <= kMaxBatchItems; ++i) big.push_back({{"jsonrpc", "2.0"}, {"id", i}, {"method", "ping"}});
  auto too_big = parse_payload(big.dump());
  REQUIRE(too_big.parse_error);
  CHECK(error_code(*too_big.parse_error) == -32600);
}

TEST_CASE("responses are single-line and survive invalid UTF-8", "[mcp]") {
  json r = make_result(1, {{"text", "line1\nline2"}});
  std::string wire = dump_compact(r);
  CHECK(wire.find('\n') == std::string::npos);
  std::string bad = "ok \xff\xfe";
  CHECK_NOTHROW(dump_compact(make_error(1, RpcError::kInternalError, bad)));
  auto e = make_error("id", RpcError::kMethodNotFound, "nope", {{"k", 1}});
  CHECK(e["error"]["data"]["k"] == 1);
  CHECK(e["jsonrpc"] == "2.0");
}

}  // namespace
}  // namespace cellgate::mcp
