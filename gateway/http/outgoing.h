// SPDX-License-Identifier: BSD-3-Clause
// outgoing: one kernel message on its way to WebSocket clients, encoded at most once per framing.
#pragma once

#include <memory>
#include <optional>
#include <string>
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
  Outgoing(std::string channel, protocol::Message message) : channel_(std::move(channel)), message_(std::move(message)) {}
  // Another node's message as it came (a relay's): a v1 client is sent its bytes as they are.
  explicit Outgoing(protocol::V1Frame frame) : channel_(frame.channel()), raw_(std::move(frame)) {}
  // A piece of another node's message, passed on as it arrives (relayed_messages.h): its bytes as read,
  // sent to a v1 client as the frame of a fragmented message that `fragment` says. Never to a legacy
  // client (ws_connection.h refuses it): the legacy framing needs the whole message.
  Outgoing(protocol::WsFragment fragment, std::string channel, std::unique_ptr<char[]> data, size_t size)
      : channel_(std::move(channel)), fragment_(fragment), piece_(std::move(data)), piece_size_(size) {}
  Outgoing(const Outgoing&) = delete;  // frame_buffers point into it
  Outgoing& operator=(const Outgoing&) = delete;

  const std::string& channel() const { return channel_; }
  // kWhole, or which piece of a message this is.
  protocol::WsFragment fragment() const { return fragment_; }
  // The frame for a protocol as buffers to write in order, encoded on first use; they point into this
  // object (which must not be moved while they are in use). v1 is the offset table, then the message's
  // own parts (or a relayed frame whole): its megabytes are never copied (what the legacy JSON splice
  // cannot avoid). Io thread only.
  FrameBuffers frame_buffers(protocol::WsProtocol p) const {
    auto& out = p == protocol::WsProtocol::kLegacy ? legacy_buffers_ : v1_buffers_;
    if (out.empty() && piece_) {
      out.emplace_back(piece_.get(), piece_size_);
    } else if (out.empty() && p == protocol::WsProtocol::kLegacy) {
      if (!legacy_) legacy_ = encode_legacy();
      out.emplace_back(legacy_->data.data(), legacy_->data.size());
    } else if (out.empty() && raw_) {
      out.emplace_back(raw_->bytes().data(), raw_->bytes().size());
    } else if (out.empty()) {
      if (!v1_head_) v1_head_ = protocol::encode_v1_head(channel_, message_);
      out.reserve(5 + message_.buffers.size());
      out.emplace_back(v1_head_->data(), v1_head_->size());
      for (const std::string* part :
           {&message_.header, &message_.parent_header, &message_.metadata, &message_.content})
        out.emplace_back(part->data(), part->size());
      for (const auto& b : message_.buffers) out.emplace_back(b.data(), b.size());
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
    if (raw_) return raw_->bytes().size() + 64;
    if (piece_) return piece_size_ + 64;
    size_t n = message_.header.size() + message_.parent_header.size() + message_.metadata.size() +
               message_.content.size() + 64;
    for (const auto& b : message_.buffers) n += b.size();
    return n;
  }

 private:
  protocol::WsFrame encode_legacy() const {
    if (!raw_) return protocol::encode_ws(protocol::WsProtocol::kLegacy, channel_, message_);
    protocol::MessageView view{raw_->header(), raw_->parent_header(), raw_->metadata(), raw_->content(), {}};
    for (size_t i = 0; i < raw_->buffer_count(); ++i) view.buffers.push_back(raw_->buffer(i));
    return protocol::encode_legacy(channel_, view);
  }

  std::string channel_;
  protocol::Message message_;
  std::optional<protocol::V1Frame> raw_;  // or this, as another node sent it
  protocol::WsFragment fragment_ = protocol::WsFragment::kWhole;
  std::unique_ptr<char[]> piece_;  // or, with fragment_ not kWhole, this piece of it
  size_t piece_size_ = 0;
  mutable std::optional<protocol::WsFrame> legacy_;
  mutable std::optional<std::string> v1_head_;
  mutable std::vector<boost::asio::const_buffer> legacy_buffers_;  // point into legacy_
  mutable std::vector<boost::asio::const_buffer> v1_buffers_;      // point into v1_head_ and message_
};

using OutgoingPtr = std::shared_ptr<const Outgoing>;

}  // namespace cellgate::http
