// SPDX-License-Identifier: BSD-3-Clause
// v1_frame: a v1.kernel.websocket.jupyter.org frame checked in place, and kept whole to be passed on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace cellgate::protocol {

// The layout: n (little-endian uint64), n offsets, then the channel, header, parent_header, metadata,
// content and the buffers, each running from its offset to the next (the last offset is the frame end).
inline constexpr size_t kV1JsonParts = 4;  // header, parent_header, metadata, content

// Checks a v1 frame and returns its n offsets. Every offset is checked against the frame size before any
// part is read; the channel must be a client's (shell, control, stdin), or iopub too when from_server;
// the header must be a JSON object with a string msg_type (peek_header). A client's other parts must be
// JSON objects; a node's are its kernel's, passed on as they are (as to a client of the node that holds
// the kernel, which nothing parses on the way either). At most max_parts parts. Never throws.
common::Result<std::vector<uint64_t>> check_v1(std::string_view data, bool binary, size_t max_parts, bool from_server);

// What check_v1_head found: need > 0, the bytes it must see before it can say more; else the frame's
// channel, and every check of check_v1(from_server) has passed.
struct V1Head {
  size_t need = 0;
  std::string channel;
};

// check_v1(from_server) of a frame of `size` bytes of which head is the start, reading only head: the
// same checks in the same order with the same errors, each as soon as head holds what it reads (the
// offset table, then the channel and the header: what the relay checks before it passes a message on as
// it arrives). What follows the header is a node's kernel's, checked by nothing (check_v1), so a frame
// whose head passes is one check_v1 passes. Never throws.
common::Result<V1Head> check_v1_head(std::string_view head, uint64_t size, bool binary, size_t max_parts = 4096);

// A message another node's kernel WebSocket sent (a relay reads them, docs/cluster.md §5): its bytes as
// read, owned, checked as decode_v1_from_server checks them (the same errors). A client of this node that
// speaks v1 is sent these bytes as they are, so the parts are never copied out of the buffer they were
// read into; the accessors read them in place. Immutable once made.
class V1Frame {
 public:
  static common::Result<V1Frame> from_server(std::unique_ptr<char[]> data, size_t size, bool binary,
                                             size_t max_parts = 4096);

  std::string_view bytes() const { return {data_.get(), size_}; }  // the whole frame
  std::string_view channel() const { return part(0); }
  std::string_view header() const { return part(1); }
  std::string_view parent_header() const { return part(2); }
  std::string_view metadata() const { return part(3); }
  std::string_view content() const { return part(4); }
  size_t buffer_count() const { return offsets_.size() - 2 - kV1JsonParts; }
  std::string_view buffer(size_t i) const { return part(1 + kV1JsonParts + i); }

 private:
  V1Frame(std::unique_ptr<char[]> data, size_t size, std::vector<uint64_t> offsets)
      : data_(std::move(data)), size_(size), offsets_(std::move(offsets)) {}
  // Part i runs from offsets_[i] to offsets_[i + 1]; check_v1 made them ordered and within size_.
  std::string_view part(size_t i) const {
    return {data_.get() + offsets_[i], static_cast<size_t>(offsets_[i + 1] - offsets_[i])};
  }

  std::unique_ptr<char[]> data_;
  size_t size_;
  std::vector<uint64_t> offsets_;
};

}  // namespace cellgate::protocol
