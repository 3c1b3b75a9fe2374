// SPDX-License-Identifier: BSD-3-Clause
// coalescing_stream: the small writes of one io turn go to the socket as one write (under a WebSocket).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/async_base.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/role.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include "common/assert.h"

namespace cellgate::http {

// An AsyncStream over Next (a connected tcp_stream or ssl_stream), made for the next layer of a
// websocket::stream. A write of fewer than kCopyBelow bytes is copied into a pending buffer and completes
// at once (posted); the pending bytes go to Next in ONE write right after a completion handler that
// started no further write, so writes made back to back (each started by the previous one's
// completion, as Beast's are) cost one sendmsg, with no timer and no added latency. Every async_write_some writes ALL its bytes, after those of every earlier write and before
// those of any later one, so two writers can share the stream frame by frame: ws_connection writes its own
// data frames while Beast writes its control frames (pong, ping, close). Backpressure is Next's: while a
// write to Next is in flight, later writes wait for it in order, and at kFlushAt pending bytes the write
// starts at once. A larger write goes to Next directly, after what is pending, so big outputs are not
// copied. Reads pass through. Io thread only.
// Errors: a failed write to Next fails every later write and flush with the same error.
template <class Next>
class CoalescingStream {
 public:
  using next_layer_type = Next;
  using executor_type = typename Next::executor_type;
  static constexpr size_t kCopyBelow = 16 * 1024;
  static constexpr size_t kFlushAt = 64 * 1024;

  explicit CoalescingStream(Next&& next) : next_(std::move(next)), state_(std::make_shared<State>()) {
    state_->owner = this;
  }
  CoalescingStream(CoalescingStream&& other) noexcept : next_(std::move(other.next_)), state_(std::move(other.state_)) {
    if (state_) state_->owner = this;
  }
  CoalescingStream& operator=(CoalescingStream&&) = delete;
  // Pending bytes are dropped and a waiting write completes with operation_aborted, as a socket's would.
  ~CoalescingStream();

  executor_type get_executor() noexcept { return next_.get_executor(); }
  Next& next_layer() noexcept { return next_; }
  const Next& next_layer() const noexcept { return next_; }

  template <class MutableBuffers, class ReadHandler>
  auto async_read_some(const MutableBuffers& buffers, ReadHandler&& handler) {
    return next_.async_read_some(buffers, std::forward<ReadHandler>(handler));
  }
  // Completion signature void(error_code, size_t).
  template <class ConstBuffers, class WriteHandler>
  auto async_write_some(const ConstBuffers& buffers, WriteHandler&& handler);
  // Completes (void(error_code)) once every byte accepted so far has been written to Next.
  template <class FlushHandler>
  auto async_flush(FlushHandler&& handler);
  // Writes what Next takes at once, without waiting and without an operation, when no byte is pending,
  // in flight or waiting (so order is kept); returns how many. 0 when it cannot: write the rest with
  // async_write_some. A write error is kept and fails every later write.
  template <class ConstBuffers>
  size_t write_now(const ConstBuffers& buffers);

  // Writes of the pending buffer to Next so far (for tests and the bench's syscall accounting).
  uint64_t flushes() const { return state_->flushes; }

 private:
  // A write or flush that waits for the write to Next in flight. run() is called when none is.
  struct Waiter {
    virtual ~Waiter() = default;
    virtual void run(CoalescingStream& s, std::unique_ptr<Waiter> self) = 0;
    virtual void abort(boost::beast::error_code ec) = 0;
  };
  template <class Handler, class Buffers>
  struct WriteOp;
  template <class Handler>
  struct FlushOp;
  template <class Handler>
  struct Accepted;
  struct State {
    CoalescingStream* owner = nullptr;  // null once the stream is gone
    std::string pending;                // accepted, not yet handed to Next
    std::string writing;                // handed to Next, in flight
    bool in_flight = false;
    uint64_t generation = 0;  // bumped by every copied write
    uint64_t flushes = 0;
    boost::beast::error_code error;
    std::vector<std::unique_ptr<Waiter>> waiters;  // in order; non-empty only while a write to Next is in flight
  };

  void submit(std::unique_ptr<Waiter> op);
  template <class ConstBuffers>
  void accept(const ConstBuffers& buffers, size_t n);  // copies into pending
  void start_flush();
  static void after_write(const std::shared_ptr<State>& st, boost::beast::error_code ec);

  Next next_;
  std::shared_ptr<State> state_;
};

// Customisation point: writes what Next takes at once, without waiting; would_block when it cannot (the
// adapter then writes asynchronously). This default always says would_block (TLS, test streams).
template <class Next, class ConstBuffers>
size_t coalescing_write_now(Next&, const ConstBuffers&, boost::beast::error_code& ec) {
  ec = boost::asio::error::would_block;
  return 0;
}
// Plain TCP: one non-blocking sendmsg(2), gathering the buffers.
template <class ConstBuffers>
size_t coalescing_write_now(boost::beast::tcp_stream& s, const ConstBuffers& b, boost::beast::error_code& ec) {
  auto& socket = s.socket();
  if (!socket.non_blocking()) socket.non_blocking(true, ec);  // asio reports would_block instead of polling
  return ec ? 0 : socket.write_some(b, ec);
}

// Beast's customisation point for closing a WebSocket: what is pending goes out, then Next's teardown.
// (The stream is asynchronous only, so Beast's synchronous operations and teardown do not apply.)
template <class Next, class TeardownHandler>
void async_teardown(boost::beast::role_type role, CoalescingStream<Next>& s, TeardownHandler&& handler);

}  // namespace cellgate::http

#include "gateway/http/coalescing_stream_ops.h"
