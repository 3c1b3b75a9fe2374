// SPDX-License-Identifier: BSD-3-Clause
// whole_message: one WebSocket message read into memory of its own, sized by its frame header, so that
// its bytes are written once and can be handed on (a relay's Outgoing) without a copy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

namespace cellgate::http {

struct WholeMessage {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  size_t regrown = 0;  // times its buffer was moved to a larger one (for tests)
};

// Kept by a reader between messages: where each message's first bytes go.
struct WholeMessageScratch {
  static constexpr size_t kSize = 16 * 1024;
  std::unique_ptr<char[]> data = std::make_unique_for_overwrite<char[]>(kSize);
};

// Reads the next message of ws (a Beast websocket::stream) whole. Its first bytes go into scratch; a
// message that fits there is copied once into a buffer of its exact size. A longer one gets one buffer of
// the length its frame header declares (read_size_hint: Beast has checked that length against
// read_message_max before this sees it), the scratch's bytes are copied in and the rest is read straight
// into it, so its megabytes are written once. A message of several frames grows, when a frame does not fit,
// to what that frame's declared length needs or twice its size, whichever is more (never past
// read_message_max): at most one move per frame, and what is copied in moves sums to less than the message
// (one move per frame to an exact fit copies the message once per frame). On a read error, ec is set and the
// message is empty. in_scratch: the caller has read the message's first in_scratch bytes into scratch (with
// async_read_some, up to its size), and the message is not done. Io thread only.
template <class Ws>
boost::asio::awaitable<WholeMessage> read_whole_message(Ws& ws, WholeMessageScratch& scratch,
                                                        boost::system::error_code& ec, size_t in_scratch = 0) {
  char* at = scratch.data.get();
  size_t capacity = WholeMessageScratch::kSize;
  WholeMessage out;
  out.size = in_scratch;
  for (bool first = in_scratch == 0; first || !ws.is_message_done(); first = false) {
    // The rest of the frame being read (exact once its header is in and it is the last), or more.
    const size_t rest = out.size == 0 ? 0 : std::max<size_t>(ws.read_size_hint(WholeMessageScratch::kSize), 1);
    if (capacity - out.size < rest) {
      const size_t max = ws.read_message_max() > 0 ? static_cast<size_t>(ws.read_message_max()) : SIZE_MAX;
      const size_t want = std::max(out.size + rest, std::min(2 * capacity, max));
      auto bigger = std::make_unique_for_overwrite<char[]>(want);
      std::memcpy(bigger.get(), at, out.size);
      out.data = std::move(bigger);
      at = out.data.get();
      capacity = want;
      ++out.regrown;
    }
    out.size += co_await ws.async_read_some(boost::asio::buffer(at + out.size, capacity - out.size),
                                            boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (ec) co_return WholeMessage{};
  }
  if (!out.data) {  // it fit in scratch
    out.data = std::make_unique_for_overwrite<char[]>(std::max<size_t>(out.size, 1));
    std::memcpy(out.data.get(), at, out.size);
  }
  co_return out;
}

}  // namespace cellgate::http
