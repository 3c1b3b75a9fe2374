// SPDX-License-Identifier: BSD-3-Clause
// ws_frame: RFC 6455 section 5.2 base framing, server side.
#include "protocol/ws_frame.h"

namespace cellgate::protocol {

WsFrameHeader::WsFrameHeader(bool binary, uint64_t payload_size, WsFragment fragment) {
  const bool fin = fragment == WsFragment::kWhole || fragment == WsFragment::kLast;
  const bool continuation = fragment == WsFragment::kMiddle || fragment == WsFragment::kLast;
  bytes_[0] = static_cast<char>((fin ? 0x80 : 0) | (continuation ? 0x0 : binary ? 0x2 : 0x1));  // FIN, opcode
  if (payload_size < 126) {
    bytes_[1] = static_cast<char>(payload_size);
    size_ = 2;
  } else if (payload_size <= 0xffff) {
    bytes_[1] = 126;
    bytes_[2] = static_cast<char>(payload_size >> 8);
    bytes_[3] = static_cast<char>(payload_size);
    size_ = 4;
  } else {
    bytes_[1] = 127;  // 64-bit length in network byte order; its top bit stays 0 (< 2^63)
    for (int i = 0; i < 8; ++i) bytes_[2 + i] = static_cast<char>(payload_size >> (56 - 8 * i));
    size_ = 10;
  }
}

}  // namespace cellgate::protocol
