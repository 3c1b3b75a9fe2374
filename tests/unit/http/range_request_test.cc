// SPDX-License-Identifier: BSD-3-Clause
// range_request tests: single byte ranges as RFC 9110 14 defines them, and what is ignored or refused.
#include "gateway/http/range_request.h"

#include <catch2/catch.hpp>

namespace cellgate::http {
namespace {

RangeDecision partial(uint64_t first, uint64_t length) { return {RangeAnswer::kPartial, {first, length}}; }

void check(std::string_view header, uint64_t size, RangeDecision want) {
  INFO("Range: " << header << " of " << size << " bytes");
  RangeDecision got = decide_range(header, size);
  CHECK(got.answer == want.answer);
  if (want.answer == RangeAnswer::kPartial) {
    CHECK(got.range.first == want.range.first);
    CHECK(got.range.length == want.range.length);
  }
}

const RangeDecision kWhole{};
const RangeDecision kUnsatisfiable{RangeAnswer::kUnsatisfiable, {}};

TEST_CASE("the three forms of a single range", "[http]") {
  check("bytes=0-99", 1000, partial(0, 100));
  check("bytes=10-10", 1000, partial(10, 1));
  check("bytes=990-2000", 1000, partial(990, 10));  // a last byte past the end is clamped
  check("bytes=500-", 1000, partial(500, 500));
  check("bytes=-100", 1000, partial(900, 100));
  check("bytes=-5000", 1000, partial(0, 1000));     // a suffix longer than the body is all of it
  check("Bytes = 0-0 ", 1, partial(0, 1));          // unit case-insensitive, whitespace around tolerated
  CHECK(content_range(partial(0, 100), 1000) == "bytes 0-99/1000");
}

TEST_CASE("unsatisfiable ranges are 416 with the size in Content-Range", "[http]") {
  check("bytes=1000-", 1000, kUnsatisfiable);
  check("bytes=1000-1001", 1000, kUnsatisfiable);
  check("bytes=-0", 1000, kUnsatisfiable);
  check("bytes=0-", 0, kUnsatisfiable);             // an empty body has no first byte
  check("bytes=-1", 0, kUnsatisfiable);
  CHECK(content_range(kUnsatisfiable, 1000) == "bytes */1000");
}

TEST_CASE("headers that are not one valid byte range are ignored for the whole body", "[http]") {
  for (const char* h : {"", "items=0-1", "bytes", "bytes=", "bytes=-", "bytes=a-b", "bytes=5-1", "bytes=0-1,5-6",
                        "bytes=+1-2", "bytes=1--2", "bytes=0x10-", "bytes=99999999999999999999-",
                        "bytes=-99999999999999999999", "bytes=1-2-3"})
    check(h, 1000, kWhole);
}

TEST_CASE("the largest offsets do not overflow", "[http]") {
  const uint64_t big = uint64_t{1} << 62;
  check("bytes=9223372036854775806-", big, kUnsatisfiable);
  check("bytes=-9223372036854775807", big, partial(0, big));
  check("bytes=4611686018427387903-9223372036854775807", big, partial(big - 1, 1));
}

}  // namespace
}  // namespace cellgate::http
