// SPDX-License-Identifier: BSD-3-Clause
// relayed_messages: another node's kernel WebSocket (v1) read as Outgoings for a client: a message whole,
// or a large one in pieces as it arrives, each passed on once the message's head has been checked.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include "common/result.h"
#include "gateway/http/outgoing.h"
#include "gateway/http/whole_message.h"
#include "protocol/v1_frame.h"
#include "protocol/ws_frame.h"

namespace cellgate::http {

// Io thread only; one per upstream, which it reads and nothing else does. Ws: a Beast websocket::stream
// whose read_message_max bounds a message (Beast refuses a longer one at its frame header).
template <class Ws>
class RelayedMessages {
 public:
  // The most bytes of a piece, and the least a message has to be to go in pieces.
  static constexpr size_t kPiece = 256 * 1024;

  explicit RelayedMessages(Ws& ws, size_t max_parts = 4096) : ws_(ws), max_parts_(max_parts) {}

  // The next message of ws for a client, or its next piece. A message comes in pieces only when pieces
  // is true (the client takes_fragments()), it is one WebSocket frame (its size is then known from its
  // header: a v1 head is checked against it) and it is longer than kPiece: its first piece once its head
  // (offsets, channel, header) passes check_v1_head, then pieces of kPiece bytes as they are read, the
  // last when the message ends. Otherwise the message whole (read_whole_message, V1Frame). A malformed
  // message is the error V1Frame::from_server gives, before any of its bytes are returned. On a read
  // error ec is set (and the result is null): a message returned in part stays unfinished (mid_message).
  boost::asio::awaitable<common::Result<OutgoingPtr>> next(bool pieces, boost::system::error_code& ec) {
    if (left_ > 0) co_return co_await next_piece(ec);
    auto* scratch = scratch_.data.get();
    const size_t n = co_await ws_.async_read_some(boost::asio::buffer(scratch, WholeMessageScratch::kSize),
                                                  boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (ec) co_return OutgoingPtr();
    // In its last frame, read_size_hint is exactly what is left of it; in another, at least initial_size.
    const bool one_frame = !ws_.is_message_done() && ws_.read_size_hint(SIZE_MAX) != SIZE_MAX;
    const uint64_t size = n + (one_frame ? ws_.read_size_hint(1) : 0);
    if (!pieces || !one_frame || size <= kPiece) {
      WholeMessage m;
      if (ws_.is_message_done()) {
        m.data = std::make_unique_for_overwrite<char[]>(std::max<size_t>(n, 1));
        std::memcpy(m.data.get(), scratch, n);
        m.size = n;
      } else {
        m = co_await read_whole_message(ws_, scratch_, ec, n);
        if (ec) co_return OutgoingPtr();
      }
      co_return whole(std::move(m.data), m.size);
    }
    // The first piece: what is in once the head has passed (the head may be longer than the scratch).
    size_t capacity = std::max(n, kPiece);
    auto data = std::make_unique_for_overwrite<char[]>(capacity);
    std::memcpy(data.get(), scratch, n);
    size_t got = n;
    for (;;) {
      auto head = protocol::check_v1_head(std::string_view(data.get(), got), size, ws_.got_binary(), max_parts_);
      if (!head) co_return head.error();
      if (head->need == 0) {
        channel_ = std::move(head->channel);
        break;
      }
      if (head->need > capacity) {  // at most size: check_v1_head checked the offsets against it
        auto bigger = std::make_unique_for_overwrite<char[]>(head->need);
        std::memcpy(bigger.get(), data.get(), got);
        data = std::move(bigger);
        capacity = head->need;
      }
      got += co_await ws_.async_read_some(boost::asio::buffer(data.get() + got, capacity - got),
                                          boost::asio::redirect_error(boost::asio::use_awaitable, ec));
      if (ec) co_return OutgoingPtr();
    }
    if (got == size) co_return whole(std::move(data), got);  // the head was all of it
    left_ = size - got;
    co_return OutgoingPtr(std::make_shared<Outgoing>(protocol::WsFragment::kFirst, channel_, std::move(data), got));
  }

  // Part of a message has been returned and not its last piece.
  bool mid_message() const { return left_ > 0; }

 private:
  boost::asio::awaitable<common::Result<OutgoingPtr>> next_piece(boost::system::error_code& ec) {
    const auto size = static_cast<size_t>(std::min<uint64_t>(left_, kPiece));
    auto data = std::make_unique_for_overwrite<char[]>(size);
    for (size_t got = 0; got < size;) {
      got += co_await ws_.async_read_some(boost::asio::buffer(data.get() + got, size - got),
                                          boost::asio::redirect_error(boost::asio::use_awaitable, ec));
      if (ec) co_return OutgoingPtr();
    }
    left_ -= size;
    // One frame of the size its header declared: its end is the message's.
    if (left_ == 0 && !ws_.is_message_done())
      co_return common::make_error(common::Errc::kInternal, "a relayed message went on past its frame");
    co_return OutgoingPtr(std::make_shared<Outgoing>(left_ == 0 ? protocol::WsFragment::kLast : protocol::WsFragment::kMiddle,
                                         channel_, std::move(data), size));
  }

  common::Result<OutgoingPtr> whole(std::unique_ptr<char[]> data, size_t size) {
    auto frame = protocol::V1Frame::from_server(std::move(data), size, ws_.got_binary(), max_parts_);
    if (!frame) return frame.error();
    return OutgoingPtr(std::make_shared<Outgoing>(std::move(frame.value())));
  }

  Ws& ws_;
  size_t max_parts_;
  WholeMessageScratch scratch_;
  uint64_t left_ = 0;    // of the message being returned in pieces
  std::string channel_;  // its channel
};

}  // namespace cellgate::http
