// SPDX-License-Identifier: BSD-3-Clause
// ws_codec hostile-input tests: every malformed frame is an error, never a crash or a throw.
#include "protocol/ws_codec.h"

#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ws_test_util.h"

using cellgate::common::Errc;
using cellgate::protocol::decode_ws;
using cellgate::protocol::WsProtocol;
namespace t = cellgate::protocol::testing;

namespace {

const std::string kHeader = R"({"msg_id": "m", "msg_type": "execute_request"})";
const std::vector<std::string> kParts = {kHeader, "{}", "{}", R"({"code": "1"})"};

bool v1_ok(const std::string& frame) { return static_cast<bool>(decode_ws(WsProtocol::kV1, frame, true)); }
bool legacy_bin_ok(const std::string& frame) { return static_cast<bool>(decode_ws(WsProtocol::kLegacy, frame, true)); }
bool legacy_text_ok(const std::string& frame) {
  return static_cast<bool>(decode_ws(WsProtocol::kLegacy, frame, false));
}

// Replaces the 8-byte little-endian word at index i (0 = offset_number, 1.. = offsets).
std::string with_word(std::string frame, size_t i, uint64_t v) {
  frame.replace(8 * i, 8, t::le64(v));
  return frame;
}

std::string with_be32(std::string frame, size_t i, uint32_t v) {
  frame.replace(4 * i, 4, t::be32(v));
  return frame;
}

}  // namespace

TEST_CASE("v1: the valid baseline decodes", "[protocol][ws][hostile]") {
  REQUIRE(v1_ok(t::v1_frame("shell", kParts)));
}

TEST_CASE("v1: truncated frames", "[protocol][ws][hostile]") {
  const std::string good = t::v1_frame("shell", kParts);
  CHECK_FALSE(v1_ok(""));
  CHECK_FALSE(v1_ok(good.substr(0, 7)));
  CHECK_FALSE(v1_ok(good.substr(0, 8)));
  CHECK_FALSE(v1_ok(good.substr(0, 8 * 7 - 1)));  // offset table cut short
  CHECK_FALSE(v1_ok(good.substr(0, 8 * 7)));      // table only
  CHECK_FALSE(v1_ok(good.substr(0, good.size() - 1)));
  CHECK_FALSE(v1_ok(good + "x"));  // last offset must be the frame end
}

TEST_CASE("v1: bad offset counts and offsets", "[protocol][ws][hostile]") {
  const std::string good = t::v1_frame("shell", kParts);
  CHECK_FALSE(v1_ok(with_word(good, 0, 0)));
  CHECK_FALSE(v1_ok(with_word(good, 0, 5)));  // needs channel + 4 parts → at least 6 offsets
  CHECK_FALSE(v1_ok(with_word(good, 0, 7)));
  CHECK_FALSE(v1_ok(with_word(good, 0, UINT64_MAX)));
  CHECK_FALSE(v1_ok(with_word(good, 0, UINT64_MAX / 8)));
  CHECK_FALSE(v1_ok(with_word(good, 0, (UINT64_MAX / 8) + 1)));  // 8*(n+1) wraps to a small number
  CHECK_FALSE(v1_ok(with_word(good, 1, 48)));                    // offset_0 must be 8*(n+1)
  CHECK_FALSE(v1_ok(with_word(good, 1, 64)));
  // Words: 0 = n, 1 = offset_0 (56), 2 = offset_1 (61), 3 = end of header, ..., 6 = end of content.
  CHECK_FALSE(v1_ok(with_word(good, 3, good.size() + 1)));  // past the end
  CHECK_FALSE(v1_ok(with_word(good, 3, UINT64_MAX)));       // far past the end
  CHECK_FALSE(v1_ok(with_word(good, 3, 57)));               // decreasing
  CHECK_FALSE(v1_ok(with_word(good, 2, 62)));               // channel "shell\x7b", header loses its brace
  CHECK_FALSE(v1_ok(with_word(good, 6, good.size() - 1)));  // last offset short of the end
  CHECK_FALSE(v1_ok(with_word(good, 6, UINT64_MAX)));
  CHECK_FALSE(v1_ok(with_word(good, 5, UINT64_MAX - 7)));   // would wrap if lengths were computed first
}

TEST_CASE("v1: too many parts", "[protocol][ws][hostile]") {
  std::vector<std::string> parts = kParts;
  parts.resize(64, "b");  // 4 JSON parts + 60 buffers = 64 parts: the default bound
  const std::string at_bound = t::v1_frame("shell", parts);
  CHECK(v1_ok(at_bound));
  parts.push_back("b");
  auto r = decode_ws(WsProtocol::kV1, t::v1_frame("shell", parts), true);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::kTooLarge);
  CHECK_FALSE(decode_ws(WsProtocol::kV1, at_bound, true, 10));
}

TEST_CASE("v1: wrong channels", "[protocol][ws][hostile]") {
  CHECK_FALSE(v1_ok(t::v1_frame("iopub", kParts)));
  CHECK_FALSE(v1_ok(t::v1_frame("hb", kParts)));
  CHECK_FALSE(v1_ok(t::v1_frame("", kParts)));
  CHECK_FALSE(v1_ok(t::v1_frame("Shell", kParts)));
  CHECK_FALSE(v1_ok(t::v1_frame(std::string("shell\0", 6), kParts)));
  CHECK(v1_ok(t::v1_frame("control", kParts)));
  CHECK(v1_ok(t::v1_frame("stdin", kParts)));
}

TEST_CASE("v1: JSON parts must be objects, header needs msg_type", "[protocol][ws][hostile]") {
  for (size_t i = 0; i < 4; ++i) {
    for (const char* bad : {"", "[]", "null", "1", "\"s\"", "{", "{} {}", "not json", "{\"a\": \"\xff\"}"}) {
      auto parts = kParts;
      parts[i] = bad;
      INFO("part " << i << " = " << bad);
      CHECK_FALSE(v1_ok(t::v1_frame("shell", parts)));
    }
  }
  auto parts = kParts;
  parts[0] = R"({"msg_id": "m"})";
  CHECK_FALSE(v1_ok(t::v1_frame("shell", parts)));
  parts[0] = R"({"msg_type": ["x"]})";
  CHECK_FALSE(v1_ok(t::v1_frame("shell", parts)));
  parts[0] = R"( {"msg_type": "x"} )";  // whitespace around an object is still an object
  CHECK(v1_ok(t::v1_frame("shell", parts)));
}

TEST_CASE("v1: text frames are refused", "[protocol][ws][hostile]") {
  CHECK_FALSE(decode_ws(WsProtocol::kV1, t::v1_frame("shell", kParts), false));
}

TEST_CASE("legacy binary: truncated and bad tables", "[protocol][ws][hostile]") {
  const std::string json_part = R"({"header": {"msg_type": "comm_msg"}, "channel": "shell"})";
  const std::string good = t::legacy_binary(json_part, {"one", "two"});
  REQUIRE(legacy_bin_ok(good));
  CHECK_FALSE(legacy_bin_ok(""));
  CHECK_FALSE(legacy_bin_ok(good.substr(0, 3)));
  CHECK_FALSE(legacy_bin_ok(good.substr(0, 4)));
  CHECK_FALSE(legacy_bin_ok(good.substr(0, 15)));  // table of 3 offsets cut short
  CHECK_FALSE(legacy_bin_ok(good.substr(0, 16)));  // offsets point past the end
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 0, 0)));            // nbufs 0
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 0, 0xffffffffu)));  // huge nbufs
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 0, 65)));
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 0, 4)));            // claims more parts than the table has
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 1, 12)));           // first offset inside the table
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 1, 20)));
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 2, 10)));           // decreasing
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 3, static_cast<uint32_t>(good.size() + 1))));
  CHECK_FALSE(legacy_bin_ok(with_be32(good, 3, 0xffffffffu)));
  auto r = decode_ws(WsProtocol::kLegacy, with_be32(good, 0, 1000), true);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::kTooLarge);
}

TEST_CASE("legacy binary: the JSON part is checked like a text frame", "[protocol][ws][hostile]") {
  CHECK_FALSE(legacy_bin_ok(t::legacy_binary("[]", {"x"})));
  CHECK_FALSE(legacy_bin_ok(t::legacy_binary("\xff\xfe", {"x"})));
  CHECK_FALSE(legacy_bin_ok(t::legacy_binary(R"({"header": {"msg_type": "a"}, "channel": "iopub"})", {"x"})));
  CHECK(legacy_bin_ok(t::legacy_binary(R"({"header": {"msg_type": "a"}, "buffers": 5})", {"x"})));
}

TEST_CASE("legacy text: hostile JSON", "[protocol][ws][hostile]") {
  CHECK(legacy_text_ok(R"({"header": {"msg_type": "a"}})"));
  for (const char* bad : {
           "", "   ", "null", "[]", "[{\"header\": {\"msg_type\": \"a\"}}]", "{", "{\"header\": ",
           "{\"header\": {\"msg_type\": \"a\"}} trailing",
           "{\"header\": {\"msg_type\": \"a\"}, \"x\": \"\xc3\x28\"}",  // invalid UTF-8
           "{\"header\": {\"msg_type\": \"a\"}, \"x\": \"\\ud800\"}",   // lone surrogate
           "{\"content\": {}}",                                          // no header
           "{\"header\": []}", "{\"header\": \"h\"}", "{\"header\": {}}", "{\"header\": {\"msg_type\": 1}}",
           "{\"header\": {\"msg_type\": \"a\"}, \"parent_header\": []}",
           "{\"header\": {\"msg_type\": \"a\"}, \"parent_header\": null}",
           "{\"header\": {\"msg_type\": \"a\"}, \"metadata\": 3}",
           "{\"header\": {\"msg_type\": \"a\"}, \"content\": \"code\"}",
           "{\"header\": {\"msg_type\": \"a\"}, \"channel\": \"iopub\"}",
           "{\"header\": {\"msg_type\": \"a\"}, \"channel\": \"hb\"}",
           "{\"header\": {\"msg_type\": \"a\"}, \"channel\": 1}",
           "{\"header\": {\"msg_type\": \"a\"}, \"channel\": [\"shell\"]}",
       }) {
    INFO(bad);
    CHECK_FALSE(legacy_text_ok(bad));
  }
}

TEST_CASE("legacy text: deep nesting is refused, not recursed into", "[protocol][ws][hostile]") {
  const size_t depth = 100000;
  std::string deep = R"({"header": {"msg_type": "a"}, "content": {"x": )" + std::string(depth, '[') +
                     std::string(depth, ']') + "}}";
  auto r = decode_ws(WsProtocol::kLegacy, deep, false);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("deep") != std::string::npos);
  std::string fine = R"({"header": {"msg_type": "a"}, "content": {"x": )" + std::string(100, '[') +
                     std::string(100, ']') + "}}";
  CHECK(legacy_text_ok(fine));
  // Brackets inside strings do not count.
  std::string in_string = R"({"header": {"msg_type": "a"}, "content": {"x": ")" + std::string(depth, '[') + "\"}}";
  CHECK(legacy_text_ok(in_string));
}
