// SPDX-License-Identifier: BSD-3-Clause
// splice_pump: bytes from one TCP socket to another through a pipe (splice(2)), never in user space.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/unique_fd.h"

namespace cellgate::egress {

// A pipe that carries one direction's bytes between two sockets.
class SplicePipe {
 public:
  // nullopt when no pipe can be made now (EMFILE, the user's pipe pages): callers copy instead.
  static std::optional<SplicePipe> make();
  int read_end() const { return r_.get(); }
  int write_end() const { return w_.get(); }
  size_t capacity() const { return capacity_; }
  size_t held = 0;  // bytes in the pipe, not yet passed on

 private:
  common::UniqueFd r_, w_;
  size_t capacity_ = 64 * 1024;
};

struct SpliceResult {
  uint64_t moved = 0;
  bool eof = false;  // `from` was shut down (its writer is done)
  std::string error;  // "" unless a socket failed, the meter refused ("egress byte cap reached") or idle
};

// Moves up to `limit` bytes from `from` to `to`, until EOF, or until a chunk the meter refuses.
// charge(n) sees each chunk before it is passed on. Each wait for either socket may last `idle`;
// then both are cancelled and the result says "idle for too long". `activity` is stamped on every
// chunk (a watchdog over two directions reads it). runs in: the io thread.
boost::asio::awaitable<SpliceResult> splice_bytes(boost::asio::ip::tcp::socket& from, boost::asio::ip::tcp::socket& to,
                                                  SplicePipe& pipe, uint64_t limit,
                                                  const std::function<bool(uint64_t)>& charge,
                                                  std::chrono::milliseconds idle,
                                                  std::chrono::steady_clock::time_point* activity = nullptr);

}  // namespace cellgate::egress
