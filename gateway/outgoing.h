// SPDX-License-Identifier: BSD-3-Clause
// outgoing: one kernel message on its way to WebSocket clients, encoded at most once per framing.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "protocol/message.h"
#include "protocol/ws_codec.h"

namespace cellgate::gateway {

// Shared by every connection it is broadcast to (and by replay buffers), so iopub fan-out costs one
// copy of the message, not one per client.
class Outgoing {
 public:
  Outgoing(std::string channel, protocol::Message message) : channel_(std::move(channel)), message_(std::move(message)) {}

  const std::string& channel() const { return channel_; }
  const protocol::Message& message() const { return message_; }
  // The frame for a protocol, encoded on first use. Io thread only.
  const protocol::WsFrame& frame(protocol::WsProtocol p) const {
    auto& slot = p == protocol::WsProtocol::kV1 ? v1_ : legacy_;
    if (!slot) slot = protocol::encode_ws(p, channel_, message_);
    return *slot;
  }
  // Approximate memory held, for queue and buffer bounds.
  size_t bytes() const {
    size_t n = message_.header.size() + message_.parent_header.size() + message_.metadata.size() +
               message_.content.size() + 64;
    for (const auto& b : message_.buffers) n += b.size();
    return n;
  }

 private:
  std::string channel_;
  protocol::Message message_;
  mutable std::optional<protocol::WsFrame> legacy_;
  mutable std::optional<protocol::WsFrame> v1_;
};

using OutgoingPtr = std::shared_ptr<const Outgoing>;

}  // namespace cellgate::gateway
