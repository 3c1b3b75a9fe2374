// SPDX-License-Identifier: BSD-3-Clause
// range_request: what a Range header asks of a body of known size (RFC 9110 14.1-14.4), single ranges only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cellgate::http {

struct ByteRange {
  uint64_t first = 0;   // offset of the first byte sent
  uint64_t length = 0;  // bytes sent (> 0)
};

enum class RangeAnswer {
  kWhole,          // no Range header, or one to ignore: 200 with the whole body
  kPartial,        // 206 with Content-Range: bytes first-last/size
  kUnsatisfiable,  // 416 with Content-Range: bytes */size
};

struct RangeDecision {
  RangeAnswer answer = RangeAnswer::kWhole;
  ByteRange range{};  // kPartial only
};

// Decides the answer to `Range: header` for a body of size bytes. Order of checks:
// 1. empty header → kWhole;
// 2. unit other than "bytes", a syntax error, or more than one range → kWhole (RFC 9110 14.2: a server
//    may ignore the header; multipart/byteranges is not offered);
// 3. "a-b" (b clamped to size-1), "a-", "-n" (the last n bytes, all when n >= size): a first byte at or
//    past size, or "-0", is kUnsatisfiable; anything else is kPartial.
// Numbers are decimal digits only, at most 19 (no sign, no overflow). Pure; thread-safe.
RangeDecision decide_range(std::string_view header, uint64_t size);

// "bytes 0-99/1000" for kPartial, "bytes */1000" for kUnsatisfiable.
std::string content_range(const RangeDecision& d, uint64_t size);

}  // namespace cellgate::http
