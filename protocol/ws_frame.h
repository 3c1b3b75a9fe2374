// SPDX-License-Identifier: BSD-3-Clause
// ws_frame: the header of one unmasked, unfragmented WebSocket data frame (RFC 6455 section 5.2).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cellgate::protocol {

// Room for the longest header: 2 bytes, then a 64-bit length.
inline constexpr size_t kWsFrameHeaderMax = 10;

// The header a server puts before a whole message of payload_size bytes: FIN set, opcode text or
// binary, no mask (a server must not mask, section 5.1), and the shortest length encoding, which
// section 5.2 requires ("the minimal number of bytes MUST be used"). No extension bits: the gateway
// negotiates no extensions.
class WsFrameHeader {
 public:
  WsFrameHeader(bool binary, uint64_t payload_size);
  const char* data() const { return bytes_.data(); }
  size_t size() const { return size_; }
  std::string_view view() const { return {bytes_.data(), size_}; }

 private:
  std::array<char, kWsFrameHeaderMax> bytes_{};
  size_t size_ = 0;
};

}  // namespace cellgate::protocol
