// SPDX-License-Identifier: BSD-3-Clause
// v1_frame tests: a relayed v1 frame kept whole is refused exactly as decode_v1_from_server refused it,
// and read in place gives the parts decode copies out.
#include "protocol/v1_frame.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/ws_codec.h"
#include "ws_test_util.h"

using cellgate::common::Errc;
using cellgate::protocol::decode_v1_from_server;
using cellgate::protocol::encode_ws;
using cellgate::protocol::Message;
using cellgate::protocol::check_v1_head;
using cellgate::protocol::V1Frame;
using cellgate::protocol::WsProtocol;
namespace t = cellgate::protocol::testing;

namespace {

const std::string kHeader = R"({"msg_id": "m1", "msg_type": "stream", "session": "s"})";

std::unique_ptr<char[]> owned(const std::string& bytes) {
  auto p = std::make_unique<char[]>(bytes.size() + 1);
  std::memcpy(p.get(), bytes.data(), bytes.size());
  return p;
}

struct Refused {
  const char* what;
  std::string frame;
  bool binary;
  Errc code;
  std::string message;  // as decode_v1_from_server said it before frames were kept whole (da404da)
};

std::vector<Refused> refused_frames() {
  const std::string good = t::v1_frame("iopub", {kHeader, "{}", "{}", "{}"});
  std::string bad_first = good;
  bad_first.replace(8, 8, t::le64(8 * 8));  // n = 6: the table is 7 * 8 bytes
  std::string out_of_order = good;
  out_of_order.replace(24, 8, t::le64(1));  // header's end before its start
  std::string out_of_range = good;
  out_of_range.replace(24, 8, t::le64(1 << 20));
  std::vector<std::string> many(4100, "{}");
  many[0] = kHeader;
  return {
      {"text frame", good, false, Errc::kBadRequest, "v1 websocket messages must be binary"},
      {"shorter than n", good.substr(0, 7), true, Errc::kBadRequest, "v1 websocket message is truncated"},
      {"too few parts", t::le64(5) + std::string(64, '\0'), true, Errc::kBadRequest,
       "v1 websocket message has too few parts"},
      {"too many parts", t::v1_frame("iopub", many), true, Errc::kTooLarge, "websocket message has too many parts"},
      {"offset table cut", good.substr(0, 40), true, Errc::kBadRequest,
       "v1 websocket message offset table is truncated"},
      {"first offset", bad_first, true, Errc::kBadRequest, "v1 websocket message first offset is wrong"},
      {"out of order", out_of_order, true, Errc::kBadRequest,
       "v1 websocket message offsets are out of order or out of range"},
      {"out of range", out_of_range, true, Errc::kBadRequest,
       "v1 websocket message offsets are out of order or out of range"},
      {"trailing bytes", good + "x", true, Errc::kBadRequest, "v1 websocket message last offset is not the frame end"},
      {"unknown channel", t::v1_frame("nope", {kHeader, "{}", "{}", "{}"}), true, Errc::kBadRequest,
       "v1 websocket message has an unknown channel"},
      {"header not JSON", t::v1_frame("iopub", {"nope", "{}", "{}", "{}"}), true, Errc::kBadRequest,
       "v1 websocket message: header is not a JSON object"},
      {"header without msg_type", t::v1_frame("iopub", {R"({"msg_id": "m"})", "{}", "{}", "{}"}), true,
       Errc::kBadRequest, "v1 websocket message: header has no string msg_type"},
  };
}

}  // namespace

TEST_CASE("a relayed frame kept whole is refused with the errors decode gave", "[protocol][ws][cluster]") {
  for (const auto& r : refused_frames()) {
    INFO(r.what);
    auto decoded = decode_v1_from_server(r.frame, r.binary);
    REQUIRE_FALSE(decoded);
    CHECK(decoded.error().message == r.message);
    CHECK(decoded.error().code == r.code);
    auto kept = V1Frame::from_server(owned(r.frame), r.frame.size(), r.binary);
    REQUIRE_FALSE(kept);
    CHECK(kept.error().message == r.message);
    CHECK(kept.error().code == r.code);
  }
}

TEST_CASE("a relayed frame kept whole reads the parts decode copies out", "[protocol][ws][cluster]") {
  Message m;
  m.header = kHeader;
  m.parent_header = R"({"msg_id": "p0"})";
  m.metadata = "{}";
  m.content = "[not an object";  // a node's kernel parts pass as they are
  for (int buffers = 0; buffers < 3; ++buffers) {
    const auto frame = encode_ws(WsProtocol::kV1, "iopub", m);
    auto decoded = decode_v1_from_server(frame.data, true);
    REQUIRE(decoded);
    auto kept = V1Frame::from_server(owned(frame.data), frame.data.size(), true);
    REQUIRE(kept);
    CHECK(kept->bytes() == frame.data);  // what a v1 client is sent: the frame as it came
    CHECK(kept->channel() == decoded->channel);
    CHECK(kept->header() == decoded->message.header);
    CHECK(kept->parent_header() == decoded->message.parent_header);
    CHECK(kept->metadata() == decoded->message.metadata);
    CHECK(kept->content() == decoded->message.content);
    REQUIRE(kept->buffer_count() == decoded->message.buffers.size());
    cellgate::protocol::MessageView view{kept->header(), kept->parent_header(), kept->metadata(), kept->content(), {}};
    for (size_t i = 0; i < kept->buffer_count(); ++i) {
      CHECK(kept->buffer(i) == decoded->message.buffers[i]);
      view.buffers.push_back(kept->buffer(i));
    }
    // A legacy client of the relaying node gets the splice of the parts in place: the same bytes.
    const auto legacy = cellgate::protocol::encode_legacy("iopub", view);
    const auto expected = encode_ws(WsProtocol::kLegacy, "iopub", decoded->message);
    CHECK(legacy.data == expected.data);
    CHECK(legacy.binary == expected.binary);
    m.buffers.push_back(std::string(static_cast<size_t>(buffers) * 5 + 1, '\x01'));
  }
}

TEST_CASE("a frame's head is refused as the whole frame is, once the bytes a check reads are in",
          "[protocol][ws][cluster]") {
  // What a relay checks of a message still arriving: each prefix of the frame, with the frame's size
  // known (its WebSocket header declares it), either asks for more or says what check_v1 says of all of it.
  for (const auto& r : refused_frames()) {
    INFO(r.what);
    std::optional<std::string> said;
    for (size_t cut = 0; cut <= r.frame.size(); ++cut) {
      auto head = check_v1_head(std::string_view(r.frame).substr(0, cut), r.frame.size(), r.binary);
      if (head && head->need > 0) {
        CHECK(head->need > cut);
        CHECK(head->need <= r.frame.size());
        continue;
      }
      REQUIRE_FALSE(head);
      CHECK(head.error().message == r.message);
      CHECK(head.error().code == r.code);
      said = head.error().message;
      break;  // refused from here on: the relay stops at the first refusal
    }
    CHECK(said);
  }
}

TEST_CASE("a good frame's head passes once its header is in, whatever follows", "[protocol][ws][cluster]") {
  Message m;
  m.header = kHeader;
  m.parent_header = "{}";
  m.metadata = "{}";
  m.content = std::string(100000, 'x');  // not JSON: a node's kernel's, passed on as it is
  m.buffers = {std::string(5000, '\x02')};
  const auto frame = encode_ws(WsProtocol::kV1, "iopub", m).data;
  const size_t header_end = t::get_le64(frame, 8 * 3);  // offsets[2]: the header's end
  for (size_t cut = 0; cut <= frame.size(); cut += cut < header_end + 10 ? 1 : 997) {
    INFO(cut);
    auto head = check_v1_head(std::string_view(frame).substr(0, cut), frame.size(), true);
    REQUIRE(head);
    if (cut < header_end) {
      CHECK(head->need > cut);
      CHECK(head->need <= header_end);
    } else {
      CHECK(head->need == 0);
      CHECK(head->channel == "iopub");
    }
  }
  // A head that claims another size than the frame's is refused: the size is the WebSocket frame's.
  auto longer = check_v1_head(frame, frame.size() + 1, true);
  REQUIRE_FALSE(longer);
  CHECK(longer.error().message == "v1 websocket message last offset is not the frame end");
}
