// SPDX-License-Identifier: BSD-3-Clause
// ws_frame_test: server frame headers byte for byte against RFC 6455 section 5.2.
#include "protocol/ws_frame.h"

#include <string>

#include <catch2/catch.hpp>

using cellgate::protocol::WsFrameHeader;

namespace {
std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}
}  // namespace

TEST_CASE("a frame header uses the shortest length encoding, FIN set and no mask", "[ws_frame]") {
  CHECK(std::string(WsFrameHeader(false, 0).view()) == bytes({0x81, 0}));
  CHECK(std::string(WsFrameHeader(true, 5).view()) == bytes({0x82, 5}));
  CHECK(std::string(WsFrameHeader(true, 125).view()) == bytes({0x82, 125}));
  CHECK(std::string(WsFrameHeader(true, 126).view()) == bytes({0x82, 126, 0, 126}));
  CHECK(std::string(WsFrameHeader(false, 0xffff).view()) == bytes({0x81, 126, 0xff, 0xff}));
  CHECK(std::string(WsFrameHeader(true, 0x10000).view()) == bytes({0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0}));
  CHECK(std::string(WsFrameHeader(true, 0x123456789aULL).view()) ==
        bytes({0x82, 127, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 0x9a}));
}

TEST_CASE("a fragmented message's frames: its opcode first, then continuations, FIN on the last", "[ws_frame]") {
  using cellgate::protocol::WsFragment;
  CHECK(std::string(WsFrameHeader(true, 5, WsFragment::kFirst).view()) == bytes({0x02, 5}));
  CHECK(std::string(WsFrameHeader(false, 5, WsFragment::kFirst).view()) == bytes({0x01, 5}));
  CHECK(std::string(WsFrameHeader(true, 0x10000, WsFragment::kMiddle).view()) ==
        bytes({0x00, 127, 0, 0, 0, 0, 0, 1, 0, 0}));
  CHECK(std::string(WsFrameHeader(true, 0, WsFragment::kLast).view()) == bytes({0x80, 0}));
  CHECK(std::string(WsFrameHeader(true, 200, WsFragment::kWhole).view()) == bytes({0x82, 126, 0, 200}));
}
