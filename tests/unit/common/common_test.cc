// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "common/progress.h"
#include "common/random.h"
#include "common/result.h"
#include "common/time_format.h"
#include "common/utf8.h"

using namespace cellgate::common;

TEST_CASE("iso8601 has microseconds and a Z", "[common]") {
  SystemTime t{std::chrono::microseconds(1700000000123456LL)};
  CHECK(iso8601(t) == "2023-11-14T22:13:20.123456Z");
  CHECK(iso8601(SystemTime{}) == "1970-01-01T00:00:00.000000Z");
  CHECK(iso8601(SystemTime{std::chrono::microseconds(-1)}) == "1969-12-31T23:59:59.999999Z");
  CHECK(iso8601(SystemTime{std::chrono::seconds(1709251199)}) == "2024-02-29T23:59:59.000000Z");
  CHECK(iso8601(SystemTime{std::chrono::seconds(7258118399)}) == "2199-12-31T23:59:59.000000Z");
  CHECK(std::regex_match(iso8601_now(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
}

TEST_CASE("uuids are v4 and distinct", "[common]") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto u = random_uuid();
    CHECK(std::regex_match(u, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
    seen.insert(u);
  }
  CHECK(seen.size() == 100);
  CHECK(random_hex(32).size() == 64);
  CHECK(to_hex("\x00\xff", 2) == "00ff");
}

TEST_CASE("result holds a value or an error", "[common]") {
  Result<int> a = 3;
  Result<int> b = make_error(Errc::kNotFound, "nope");
  CHECK(a.has_value());
  CHECK(*a == 3);
  CHECK_FALSE(b.has_value());
  CHECK(b.error().code == Errc::kNotFound);
}

TEST_CASE("valid_utf8 accepts well-formed text and rejects every malformed class", "[common]") {
  using cellgate::common::valid_utf8;
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain ascii"));
  CHECK(valid_utf8(std::string_view("nul\0inside", 10)));
  CHECK(valid_utf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // été € 😀
  CHECK(valid_utf8("\xF4\x8F\xBF\xBF"));                                    // U+10FFFF
  CHECK_FALSE(valid_utf8("\x80"));                                          // lone continuation
  CHECK_FALSE(valid_utf8("\xC3"));                                          // truncated
  CHECK_FALSE(valid_utf8("\xE2\x82"));                                      // truncated
  CHECK_FALSE(valid_utf8("\xC0\xAF"));                                      // overlong '/'
  CHECK_FALSE(valid_utf8("\xE0\x80\xAF"));                                  // overlong
  CHECK_FALSE(valid_utf8("\xED\xA0\x80"));                                  // surrogate U+D800
  CHECK_FALSE(valid_utf8("\xF4\x90\x80\x80"));                              // above U+10FFFF
  CHECK_FALSE(valid_utf8("\xF5\x80\x80\x80"));
  CHECK_FALSE(valid_utf8("\xFF"));
  CHECK_FALSE(valid_utf8("ok\xC3(x"));                                      // bad continuation
}

TEST_CASE("one_line escapes control bytes so client text cannot forge log lines", "[common]") {
  using cellgate::common::one_line;
  CHECK(one_line("session=abc msg=\"dropped\"") == "session=abc msg=\"dropped\"");
  CHECK(one_line("a\n2026-01-01T00:00:00Z error forged") == "a\\n2026-01-01T00:00:00Z error forged");
  CHECK(one_line(std::string("\r\t\x00\x1b[31m\x7f\xc3\xa9", 11)) == "\\r\\t\\x00\\x1b[31m\\x7f\xc3\xa9");
}

TEST_CASE("progress: the meter's text, and no output where stderr is not a terminal", "[common]") {
  CHECK(format_progress("fsck", ProgressTick{"objects", 1204, 8000, 0}, 3.44) == "fsck: objects 1204/8000 (15%) 3.4s");
  CHECK(format_progress("gc", ProgressTick{"removing", 3, 3, 3u << 30}, 0.05) == "gc: removing 3/3 (100%) 3.0 GiB 0.1s");
  CHECK(format_progress("gc", ProgressTick{"objects", 7, 0, 0}, 1) == "gc: objects 7 1.0s");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  {
    TerminalProgress meter("fsck", fds[1]);
    CHECK_FALSE(meter.enabled());
    CHECK_FALSE(meter.fn());  // workers skip an empty function
    meter.update(ProgressTick{"objects", 1, 2, 0});
  }
  ::close(fds[1]);
  char buf[16];
  CHECK(::read(fds[0], buf, sizeof buf) == 0);  // nothing was written to the pipe
  ::close(fds[0]);
}

TEST_CASE("progress: on a terminal the meter draws in place and erases itself", "[common]") {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(::grantpt(master) == 0);
  REQUIRE(::unlockpt(master) == 0);
  int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  REQUIRE(slave >= 0);
  ::setenv("TERM", "xterm", 1);
  {
    TerminalProgress meter("fsck", slave);
    REQUIRE(meter.enabled());
    auto fn = meter.fn();
    fn(ProgressTick{"objects", 1, 2, 0});
    fn(ProgressTick{"objects", 2, 2, 0});  // the last step is drawn even within 100 ms
  }
  // Everything written is in the terminal's buffer; a read returns it a write at a time, and EIO
  // once the last slave descriptor is closed and the buffer drained.
  ::close(slave);
  std::string out;
  char chunk[4096];
  for (ssize_t n; (n = ::read(master, chunk, sizeof chunk)) > 0;) out.append(chunk, static_cast<size_t>(n));
  REQUIRE(!out.empty());
  CHECK(out.rfind("\r\033[Kfsck: objects 1/2 (50%)", 0) == 0);
  CHECK(out.find("\r\033[Kfsck: objects 2/2 (100%)") != std::string::npos);
  CHECK(out.substr(out.size() - 4) == "\r\033[K");
  ::close(master);
}
