// SPDX-License-Identifier: BSD-3-Clause
// ws_codec tests: legacy text/binary and v1 layouts, byte-exact, in both directions.
#include "protocol/ws_codec.h"

#include <cstdint>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "ws_test_util.h"

using cellgate::protocol::decode_ws;
using cellgate::protocol::encode_ws;
using cellgate::protocol::Message;
using cellgate::protocol::WsProtocol;
using nlohmann::json;
namespace t = cellgate::protocol::testing;

namespace {

Message stream_message() {
  Message m;
  m.header = R"({"msg_id": "m1", "msg_type": "stream", "session": "s"})";
  m.parent_header = R"({"msg_id": "p0"})";
  m.metadata = "{}";
  m.content = R"({"name": "stdout", "text": "hi\n"})";
  return m;
}

void check_json_equal(const std::string& a, const std::string& b) {
  CHECK(json::parse(a) == json::parse(b));
}

}  // namespace

TEST_CASE("legacy text frame is jupyter_server's json.dumps layout", "[protocol][ws]") {
  auto frame = encode_ws(WsProtocol::kLegacy, "iopub", stream_message());
  CHECK_FALSE(frame.binary);
  CHECK(frame.data ==
        R"({"header": {"msg_id": "m1", "msg_type": "stream", "session": "s"}, "msg_id": "m1", )"
        R"("msg_type": "stream", "parent_header": {"msg_id": "p0"}, "metadata": {}, )"
        R"("content": {"name": "stdout", "text": "hi\n"}, "buffers": [], "channel": "iopub"})");
}

TEST_CASE("legacy text frame escapes msg_id and msg_type", "[protocol][ws]") {
  Message m = stream_message();
  m.header = R"({"msg_id": "a\"b\\c\u0001", "msg_type": "t\n"})";
  auto frame = encode_ws(WsProtocol::kLegacy, "shell", m);
  json parsed = json::parse(frame.data);
  CHECK(parsed["msg_id"] == "a\"b\\c\x01");
  CHECK(parsed["msg_type"] == "t\n");
  CHECK(frame.data.find(R"("msg_id": "a\"b\\c\u0001")") != std::string::npos);
}

TEST_CASE("legacy text round trip, server to client to server", "[protocol][ws]") {
  Message m = stream_message();
  auto frame = encode_ws(WsProtocol::kLegacy, "shell", m);
  auto back = decode_ws(WsProtocol::kLegacy, frame.data, frame.binary);
  REQUIRE(back);
  CHECK(back->channel == "shell");
  check_json_equal(back->message.header, m.header);
  check_json_equal(back->message.parent_header, m.parent_header);
  check_json_equal(back->message.metadata, m.metadata);
  check_json_equal(back->message.content, m.content);
  CHECK(back->message.buffers.empty());
  CHECK(back->message.identities.empty());
}

TEST_CASE("legacy text from a client: defaults and ignored keys", "[protocol][ws]") {
  auto r = decode_ws(WsProtocol::kLegacy,
                     R"({"header": {"msg_type": "kernel_info_request", "msg_id": "x"}, "content": {},
                         "buffers": ["ignored"], "msg_id": "x"})",
                     false);
  REQUIRE(r);
  CHECK(r->channel == "shell");  // no channel → shell, as jupyter_server assumes
  CHECK(r->message.parent_header == "{}");
  CHECK(r->message.metadata == "{}");
  CHECK(r->message.content == "{}");
  CHECK(r->message.header == R"({"msg_id":"x","msg_type":"kernel_info_request"})");
  CHECK(r->message.buffers.empty());

  auto no_content = decode_ws(WsProtocol::kLegacy, R"({"header": {"msg_type": "a"}, "channel": null})", false);
  REQUIRE(no_content);
  CHECK(no_content->channel == "shell");
  CHECK(no_content->message.content == "{}");

  for (const char* channel : {"shell", "control", "stdin"}) {
    auto c = decode_ws(WsProtocol::kLegacy,
                       std::string(R"({"header": {"msg_type": "a"}, "channel": ")") + channel + "\"}", false);
    REQUIRE(c);
    CHECK(c->channel == channel);
  }
}

TEST_CASE("legacy binary frame layout with buffers", "[protocol][ws]") {
  Message m = stream_message();
  m.buffers = {std::string("\x00\x01\xff", 3), "", "tail"};
  auto frame = encode_ws(WsProtocol::kLegacy, "iopub", m);
  REQUIRE(frame.binary);
  const std::string body =
      R"({"header": {"msg_id": "m1", "msg_type": "stream", "session": "s"}, "msg_id": "m1", )"
      R"("msg_type": "stream", "parent_header": {"msg_id": "p0"}, "metadata": {}, )"
      R"("content": {"name": "stdout", "text": "hi\n"}, "channel": "iopub"})";
  const uint32_t start = 4 * 5;
  std::string expected = t::be32(4) + t::be32(start) + t::be32(start + static_cast<uint32_t>(body.size())) +
                         t::be32(start + static_cast<uint32_t>(body.size()) + 3) +
                         t::be32(start + static_cast<uint32_t>(body.size()) + 3) + body +
                         std::string("\x00\x01\xff", 3) + "tail";
  CHECK(frame.data == expected);
}

TEST_CASE("legacy binary round trip, both directions", "[protocol][ws]") {
  Message m = stream_message();
  m.buffers = {std::string(1000, '\x7f'), std::string("\0\0", 2)};
  auto frame = encode_ws(WsProtocol::kLegacy, "control", m);
  REQUIRE(frame.binary);
  auto back = decode_ws(WsProtocol::kLegacy, frame.data, true);
  REQUIRE(back);
  CHECK(back->channel == "control");
  check_json_equal(back->message.header, m.header);
  check_json_equal(back->message.content, m.content);
  CHECK(back->message.buffers == m.buffers);

  // A frame as a browser builds it (JSON then buffers), decoded and re-encoded.
  std::string json_part = R"({"header": {"msg_type": "comm_msg", "msg_id": "c"}, "parent_header": {},
                               "metadata": {}, "content": {"comm_id": "z"}, "channel": "shell"})";
  std::string client = t::legacy_binary(json_part, {"abc", "defg"});
  auto decoded = decode_ws(WsProtocol::kLegacy, client, true);
  REQUIRE(decoded);
  CHECK(decoded->channel == "shell");
  CHECK(decoded->message.buffers == std::vector<std::string>{"abc", "defg"});
  CHECK(decoded->message.content == R"({"comm_id":"z"})");
}

TEST_CASE("v1 frame: the contract's worked example offsets", "[protocol][ws]") {
  Message m = stream_message();
  auto frame = encode_ws(WsProtocol::kV1, "shell", m);
  REQUIRE(frame.binary);
  const uint64_t h = m.header.size(), p = m.parent_header.size(), md = m.metadata.size(), c = m.content.size();
  std::string expected = t::le64(6) + t::le64(56) + t::le64(61) + t::le64(61 + h) + t::le64(61 + h + p) +
                         t::le64(61 + h + p + md) + t::le64(61 + h + p + md + c) + "shell" + m.header +
                         m.parent_header + m.metadata + m.content;
  CHECK(frame.data == expected);
  CHECK(frame.data.size() == 61 + h + p + md + c);
}

TEST_CASE("v1 round trip keeps every part byte for byte", "[protocol][ws]") {
  Message m = stream_message();
  m.content = "{ \"odd\" :  [1, 2.50, \"\\u00e9\"] }";  // spacing and escapes must survive as sent
  m.buffers = {"b0", std::string("\0\xff", 2), ""};
  auto frame = encode_ws(WsProtocol::kV1, "stdin", m);
  CHECK(t::get_le64(frame.data, 0) == 9);
  auto back = decode_ws(WsProtocol::kV1, frame.data, true);
  REQUIRE(back);
  CHECK(back->channel == "stdin");
  CHECK(back->message.header == m.header);
  CHECK(back->message.parent_header == m.parent_header);
  CHECK(back->message.metadata == m.metadata);
  CHECK(back->message.content == m.content);
  CHECK(back->message.buffers == m.buffers);
}

TEST_CASE("v1 encodes iopub and empty parts as given", "[protocol][ws]") {
  Message m;  // server side never re-serialises: parts go out exactly as they came from the kernel
  auto frame = encode_ws(WsProtocol::kV1, "iopub", m);
  CHECK(frame.data == t::le64(6) + t::le64(56) + t::le64(61) + t::le64(61) + t::le64(61) + t::le64(61) +
                          t::le64(61) + "iopub");
}

TEST_CASE("v1 head followed by the parts is the v1 frame (scatter/gather writes)", "[protocol][ws]") {
  Message m = stream_message();
  for (int buffers = 0; buffers < 3; ++buffers) {
    std::string gathered = cellgate::protocol::encode_v1_head("iopub", m);
    gathered += m.header + m.parent_header + m.metadata + m.content;
    for (const auto& b : m.buffers) gathered += b;
    CHECK(gathered == encode_ws(WsProtocol::kV1, "iopub", m).data);
    m.buffers.push_back(std::string(static_cast<size_t>(buffers) * 7 + 1, '\0'));
  }
}

TEST_CASE("v1 from another node: iopub is a channel, and only there", "[protocol][ws][cluster]") {
  const Message m = stream_message();
  auto frame = encode_ws(WsProtocol::kV1, "iopub", m);
  // A client may not send on iopub; a node relaying its kernel's messages does.
  CHECK_FALSE(decode_ws(WsProtocol::kV1, frame.data, true));
  auto relayed = cellgate::protocol::decode_v1_from_server(frame.data, true);
  REQUIRE(relayed);
  CHECK(relayed->channel == "iopub");
  CHECK(relayed->message.content == m.content);
  CHECK(relayed->message.header == m.header);
  CHECK_FALSE(cellgate::protocol::decode_v1_from_server(frame.data, false));  // v1 is binary
  CHECK_FALSE(cellgate::protocol::decode_v1_from_server(frame.data.substr(0, 12), true));
  auto bogus = encode_ws(WsProtocol::kV1, "nope", m);
  CHECK_FALSE(cellgate::protocol::decode_v1_from_server(bogus.data, true));
  // The kernel's parts pass as they are, as its own node passes them on: only a client's are checked.
  Message raw = stream_message();
  raw.content = "[not an object";
  auto passed = encode_ws(WsProtocol::kV1, "iopub", raw);
  auto got = cellgate::protocol::decode_v1_from_server(passed.data, true);
  REQUIRE(got);
  CHECK(got->message.content == raw.content);
  CHECK_FALSE(decode_ws(WsProtocol::kV1, encode_ws(WsProtocol::kV1, "shell", raw).data, true));
  raw.header = "nope";  // the header is still read (msg_id, msg_type)
  CHECK_FALSE(cellgate::protocol::decode_v1_from_server(encode_ws(WsProtocol::kV1, "iopub", raw).data, true));
}
