// SPDX-License-Identifier: BSD-3-Clause
// ws_frame: the header of one unmasked WebSocket data frame (RFC 6455 section 5.2), a whole message or a fragment.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cellgate::protocol {

// Room for the longest header: 2 bytes, then a 64-bit length.
inline constexpr size_t kWsFrameHeaderMax = 10;

// Which part of a message a frame carries (section 5.4): all of it, or a fragment. A fragmented message
// is its first frame (the message's opcode, FIN clear), continuation frames (opcode 0), and a last
// continuation frame with FIN set; control frames may come between them, data frames of other messages
// may not.
enum class WsFragment : uint8_t { kWhole, kFirst, kMiddle, kLast };

// The header a server puts before a whole message of payload_size bytes: FIN set, opcode text or
// binary (or a fragment's, above), no mask (a server must not mask, section 5.1), and the shortest length encoding, which
// section 5.2 requires ("the minimal number of bytes MUST be used"). No extension bits: the gateway
// negotiates no extensions.
class WsFrameHeader {
 public:
  // fragment: kWhole, or the frame of a fragmented message it heads (FIN and opcode as section 5.4 says).
  WsFrameHeader(bool binary, uint64_t payload_size, WsFragment fragment = WsFragment::kWhole);
  const char* data() const { return bytes_.data(); }
  size_t size() const { return size_; }
  std::string_view view() const { return {bytes_.data(), size_}; }

 private:
  std::array<char, kWsFrameHeaderMax> bytes_{};
  size_t size_ = 0;
};

}  // namespace cellgate::protocol
