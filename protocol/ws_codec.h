// SPDX-License-Identifier: BSD-3-Clause
// ws_codec: the kernel WebSocket framings (legacy JSON and v1.kernel.websocket.jupyter.org) <-> Message.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "protocol/message.h"

namespace cellgate::protocol {

enum class WsProtocol { kLegacy, kV1 };
inline constexpr std::string_view kV1Subprotocol = "v1.kernel.websocket.jupyter.org";

struct WsFrame {
  std::string data;
  bool binary = false;
};

struct WsMessage {
  std::string channel;  // shell, control, stdin, iopub (client→server: missing channel → "shell")
  Message message;      // identities empty
};

// A message's parts read where they are (a V1Frame's, a Message's).
struct MessageView {
  std::string_view header, parent_header, metadata, content;
  std::vector<std::string_view> buffers;
};

// Server→client. Legacy: a text JSON frame {header, msg_id, msg_type, parent_header, metadata,
// content, buffers: [], channel} built by splicing the parts' JSON text (no re-serialisation), or,
// when there are buffers, the binary layout with big-endian uint32 offsets. v1: the binary layout with
// little-endian uint64 offsets, parts copied as they are. msg_id/msg_type come from peek_header.
WsFrame encode_ws(WsProtocol protocol, std::string_view channel, const Message& m);

// The legacy framing of parts read in place: the bytes encode_ws(kLegacy, ...) makes of the same parts.
WsFrame encode_legacy(std::string_view channel, const MessageView& m);

// The start of the v1 frame encode_ws builds: its offset table and the channel. The whole frame is
// this, then header, parent_header, metadata, content and the buffers, so a writer can send the
// message's own parts after it (scatter/gather) instead of copying them into one frame.
std::string encode_v1_head(std::string_view channel, const Message& m);

// Client→server. Validates every offset and length against the frame size before reading, rejects
// non-object JSON parts, unknown channels and anything over max_parts parts. Never throws.
common::Result<WsMessage> decode_ws(WsProtocol protocol, std::string_view data, bool binary,
                                    size_t max_parts = 64);

// Server→client v1, as a relay reads another node's kernel (docs/cluster.md): the same checks of the
// framing (offsets, channel, iopub a channel too) and of the header, but not of the other parts' JSON:
// they are the kernel's, passed on as they are (as to a client of the node that holds the kernel).
common::Result<WsMessage> decode_v1_from_server(std::string_view data, bool binary, size_t max_parts = 4096);

}  // namespace cellgate::protocol
