// SPDX-License-Identifier: BSD-3-Clause
// outgoing: one kernel message on its way to WebSocket clients, encoded at most once per framing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/buffer.hpp>

#include "protocol/message.h"
#include "protocol/v1_frame.h"
#include "protocol/ws_codec.h"
#include "protocol/ws_frame.h"

namespace cellgate::http {

// Buffers an Outgoing keeps, as a ConstBufferSequence that copies without allocating (Beast's and
// asio's write operations copy the sequence several times per message).
class FrameBuffers {
 public:
  using value_type = boost::asio::const_buffer;
  using const_iterator = const boost::asio::const_buffer*;
  FrameBuffers(const_iterator begin, const_iterator end) : begin_(begin), end_(end) {}
  const_iterator begin() const { return begin_; }
  const_iterator end() const { return end_; }

 private:
  const_iterator begin_;
  const_iterator end_;
};

// Shared by every connection it is broadcast to (and by replay buffers), so iopub fan-out costs one
// copy of the message, not one per client.
class Outgoing {
 public:
  Outgoing(std::string channel, protocol::Message message) : channel_(std::move(channel)), body_(std::move(message)) {}
  // Another node's message as it came (a relay's): a v1 client is sent its bytes as they are.
  explicit Outgoing(protocol::V1Frame frame) : channel_(frame.channel()), body_(std::move(frame)) {}
  // A piece of another node's message, passed on as it arrives (relayed_messages.h): its bytes as read,
  // sent to a v1 client as the frame of a fragmented message that `fragment` says. Never to a legacy
  // client (ws_connection.h refuses it): the legacy framing needs the whole message.
  Outgoing(protocol::WsFragment fragment, std::string channel, std::unique_ptr<char[]> data, size_t size)
      : channel_(std::move(channel)), body_(Piece{fragment, std::move(data), size}) {}
  Outgoing(const Outgoing&) = delete;  // frame_buffers point into it
  Outgoing& operator=(const Outgoing&) = delete;

  const std::string& channel() const { return channel_; }
  // kWhole, or which piece of a message this is.
  protocol::WsFragment fragment() const {
    const auto* piece = std::get_if<Piece>(&body_);
    return piece ? piece->fragment : protocol::WsFragment::kWhole;
  }
  // The frame for a protocol as buffers to write in order, encoded on first use; they point into this
  // object (which must not be moved while they are in use). v1 is the offset table, then the message's
  // own parts (or a relayed frame whole): its megabytes are never copied (what the legacy JSON splice
  // cannot avoid). Io thread only.
  FrameBuffers frame_buffers(protocol::WsProtocol p) const {
    auto& out = p == protocol::WsProtocol::kLegacy ? legacy_buffers_ : v1_buffers_;
    if (!out.empty()) return {out.data(), out.data() + out.size()};
    if (const auto* piece = std::get_if<Piece>(&body_)) {
      out.emplace_back(piece->data.get(), piece->size);
    } else if (p == protocol::WsProtocol::kLegacy) {
      if (!legacy_) legacy_ = encode_legacy();
      out.emplace_back(legacy_->data.data(), legacy_->data.size());
    } else if (const auto* raw = std::get_if<protocol::V1Frame>(&body_)) {
      out.emplace_back(raw->bytes().data(), raw->bytes().size());
    } else {
      const auto& message = std::get<protocol::Message>(body_);
      if (!v1_head_) v1_head_ = protocol::encode_v1_head(channel_, message);
      out.reserve(5 + message.buffers.size());
      out.emplace_back(v1_head_->data(), v1_head_->size());
      for (const std::string* part : {&message.header, &message.parent_header, &message.metadata, &message.content})
        out.emplace_back(part->data(), part->size());
      for (const auto& b : message.buffers) out.emplace_back(b.data(), b.size());
    }
    return {out.data(), out.data() + out.size()};
  }
  bool binary_frame(protocol::WsProtocol p) const {
    if (p == protocol::WsProtocol::kV1) return true;
    if (!legacy_) legacy_ = encode_legacy();
    return legacy_->binary;
  }
  // Approximate memory held, for queue and buffer bounds.
  size_t bytes() const {
    if (const auto* raw = std::get_if<protocol::V1Frame>(&body_)) return raw->bytes().size() + 64;
    if (const auto* piece = std::get_if<Piece>(&body_)) return piece->size + 64;
    const auto& message = std::get<protocol::Message>(body_);
    size_t n = message.header.size() + message.parent_header.size() + message.metadata.size() +
               message.content.size() + 64;
    for (const auto& b : message.buffers) n += b.size();
    return n;
  }

 private:
  struct Piece {
    protocol::WsFragment fragment;  // never kWhole
    std::unique_ptr<char[]> data;
    size_t size;
  };

  // Only whole messages are framed for legacy clients (a piece is refused before this).
  protocol::WsFrame encode_legacy() const {
    if (const auto* message = std::get_if<protocol::Message>(&body_))
      return protocol::encode_ws(protocol::WsProtocol::kLegacy, channel_, *message);
    const auto& raw = std::get<protocol::V1Frame>(body_);
    protocol::MessageView view{raw.header(), raw.parent_header(), raw.metadata(), raw.content(), {}};
    for (size_t i = 0; i < raw.buffer_count(); ++i) view.buffers.push_back(raw.buffer(i));
    return protocol::encode_legacy(channel_, view);
  }

  std::string channel_;
  // A message of this node's kernel, a frame another node sent whole, or a piece of one.
  std::variant<protocol::Message, protocol::V1Frame, Piece> body_;
  mutable std::optional<protocol::WsFrame> legacy_;
  mutable std::optional<std::string> v1_head_;
  mutable std::vector<boost::asio::const_buffer> legacy_buffers_;  // point into legacy_
  mutable std::vector<boost::asio::const_buffer> v1_buffers_;      // point into v1_head_ and body_
};

using OutgoingPtr = std::shared_ptr<const Outgoing>;

}  // namespace cellgate::http
