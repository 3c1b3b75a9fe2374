// SPDX-License-Identifier: BSD-3-Clause
// zmtp tests: our greeting and READY, the decoder fed in every split, and hostile peers.
#include "protocol/zmtp.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace zmtp = cellgate::protocol::zmtp;
using zmtp::SocketType;
using zmtp::Unit;

namespace {

// A peer's greeting as libzmq 4.3 sends it (version 3.1, NULL, as-server).
std::string peer_greeting(int major = 3, std::string_view mechanism = "NULL") {
  std::string g(64, '\0');
  g[0] = static_cast<char>(0xff);
  g[8] = 1;  // libzmq puts the greeting length hint here; padding is not checked
  g[9] = 0x7f;
  g[10] = static_cast<char>(major);
  g[11] = 1;
  g.replace(12, mechanism.size(), mechanism);
  g[32] = 1;
  return g;
}

std::string command(std::string_view name, std::string_view data) {
  std::string body(1, static_cast<char>(name.size()));
  body.append(name).append(data);
  std::string f;
  f.push_back(0x04);
  f.push_back(static_cast<char>(body.size()));
  return f + body;
}

std::string property(std::string_view k, std::string_view v) {
  std::string p(1, static_cast<char>(k.size()));
  p.append(k);
  for (int s = 24; s >= 0; s -= 8) p.push_back(static_cast<char>((v.size() >> s) & 0xff));
  return p.append(v);
}

std::string ready(std::string_view type) { return command("READY", property("socket-type", type)); }

std::string message(const std::vector<std::string>& frames) {
  std::string out;
  zmtp::append_message(out, frames);
  return out;
}

struct Collected {
  std::vector<std::vector<std::string>> messages;
  std::vector<std::string> pings;
  int dropped = 0;
  std::vector<std::vector<std::string>> dropped_heads;
};

// Feeds input in pieces of `step` bytes, as reads would, keeping what parse did not consume.
cellgate::common::Result<size_t> feed(zmtp::Decoder& d, const std::string& input, size_t step, Collected& got) {
  std::string buffered;
  size_t total = 0;
  for (size_t at = 0; at < input.size(); at += step) {
    buffered += input.substr(at, step);
    auto used = d.parse(buffered, [&](Unit u, const std::vector<std::string_view>& f) {
      if (u == Unit::kMessage) got.messages.emplace_back(f.begin(), f.end());
      if (u == Unit::kPing) got.pings.emplace_back(f.at(0));
      if (u == Unit::kDropped) {
        ++got.dropped;
        got.dropped_heads.emplace_back(f.begin(), f.end());
      }
      return true;
    });
    if (!used) return used.error();
    buffered.erase(0, *used);
    total += *used;
  }
  return total;
}

}  // namespace

TEST_CASE("zmtp: our hello is a 3.0 NULL greeting followed by READY with type and identity") {
  std::string h = zmtp::hello(SocketType::kDealer, "session-1");
  REQUIRE(h.size() > zmtp::kGreetingBytes);
  CHECK(static_cast<uint8_t>(h[0]) == 0xff);
  CHECK(h[9] == 0x7f);
  CHECK(h[10] == 3);
  CHECK(h[11] == 0);
  CHECK(h.substr(12, 20) == std::string("NULL") + std::string(16, '\0'));
  CHECK(h[32] == 0);  // we are the client
  std::string rest = h.substr(zmtp::kGreetingBytes);
  CHECK(rest == command("READY", property("Socket-Type", "DEALER") + property("Identity", "session-1")));
  CHECK(zmtp::hello(SocketType::kSub, "").substr(64) == command("READY", property("Socket-Type", "SUB")));
}

TEST_CASE("zmtp: frames use the short form up to 255 bytes and the long form above") {
  std::string small = message({"ab", std::string(255, 'x')});
  CHECK(small.substr(0, 4) == std::string("\x01\x02" "ab", 4));
  CHECK(static_cast<uint8_t>(small[5]) == 255);
  std::string big = message({std::string(256, 'y')});
  CHECK(big[0] == 0x02);
  CHECK(big.substr(1, 8) == std::string("\0\0\0\0\0\0\x01\x00", 8));
  CHECK(big.size() == 9 + 256);
}

TEST_CASE("zmtp: the decoder delivers each message once, whatever the read boundaries") {
  std::string big(70000, 'b');
  std::string input = peer_greeting() + ready("ROUTER") + message({"<IDS|MSG>", "sig", "{}"}) +
                      command("PING", std::string("\x00\x0a", 2) + "ctx") + message({"", big}) + message({"one"});
  for (size_t step : {size_t{1}, size_t{7}, size_t{64}, size_t{4096}, input.size()}) {
    zmtp::Decoder d(SocketType::kDealer, 1 << 20, 64);
    Collected got;
    auto used = feed(d, input, step, got);
    REQUIRE(used);
    CHECK(*used == input.size());
    CHECK(d.ready());
    REQUIRE(got.messages.size() == 3);
    CHECK(got.messages[0] == std::vector<std::string>{"<IDS|MSG>", "sig", "{}"});
    CHECK(got.messages[1] == std::vector<std::string>{"", big});
    CHECK(got.messages[2] == std::vector<std::string>{"one"});
    CHECK(got.pings == std::vector<std::string>{"ctx"});
  }
}

TEST_CASE("zmtp: a partial unit is not consumed and wanted() says how much it needs") {
  zmtp::Decoder d(SocketType::kSub, 1 << 20, 64);
  Collected got;
  std::string head = peer_greeting() + ready("PUB");
  REQUIRE(feed(d, head, head.size(), got).value() == head.size());
  std::string m = message({std::string(5000, 'z')});
  auto used = d.parse(std::string_view(m).substr(0, 100), [](Unit, const auto&) { return true; });
  REQUIRE(used);
  CHECK(*used == 0);
  CHECK(d.wanted() == 9 + 5000);
}

TEST_CASE("zmtp: a message over the bounds streams past unbuffered and the next one arrives") {
  zmtp::Decoder d(SocketType::kDealer, 1000, 8);
  std::string too_big = message({"a", std::string(2000, 'x'), "c"});
  std::string too_many = message(std::vector<std::string>(9, "f"));
  std::string input = peer_greeting() + ready("ROUTER") + too_big + too_many + message({"ok"});
  for (size_t step : {size_t{1}, size_t{100}, input.size()}) {
    zmtp::Decoder fresh(SocketType::kDealer, 1000, 8);
    Collected got;
    auto used = feed(fresh, input, step, got);
    REQUIRE(used);
    CHECK(got.dropped == 2);
    // What came before the frame that broke the bound is reported (a notice finds its requester).
    CHECK(got.dropped_heads == std::vector<std::vector<std::string>>{{"a"}, std::vector<std::string>(8, "f")});
    REQUIRE(got.messages.size() == 1);
    CHECK(got.messages[0] == std::vector<std::string>{"ok"});
  }
  // Consumed while streaming: after the header of the oversized frame, every byte is taken at once.
  Collected got;
  std::string start = peer_greeting() + ready("ROUTER") + too_big.substr(0, 20);
  CHECK(feed(d, start, start.size(), got).value() == start.size());
}

TEST_CASE("zmtp: drop_incomplete drops the message at the front from its incomplete frame on") {
  auto sink = [](Collected& got) {
    return [&got](Unit u, const std::vector<std::string_view>& f) {
      if (u == Unit::kMessage) got.messages.emplace_back(f.begin(), f.end());
      if (u == Unit::kDropped) got.dropped_heads.emplace_back(f.begin(), f.end());
      return true;
    };
  };
  const std::string head = peer_greeting() + ready("ROUTER");
  const std::string big = message({"id", "<IDS|MSG>", std::string(5000, 'x'), "tail"});
  const std::string next = message({"ok"});
  // Cut inside the big frame's body, and inside the header of the frame after it.
  for (size_t cut : {head.size() + 30, head.size() + 4 + 11 + 9 + 5000 + 1}) {
    zmtp::Decoder d(SocketType::kDealer, 1 << 20, 64);
    Collected got;
    std::string input = head + big + next;
    std::string first = input.substr(0, cut);
    auto used = d.parse(first, sink(got));
    REQUIRE(used);
    CHECK(got.dropped_heads.empty());  // nothing to drop until asked: the unit just waits
    d.drop_incomplete();
    std::string rest = first.substr(*used);
    auto dropped = d.parse(rest, sink(got));
    REQUIRE(dropped);
    CHECK(rest.size() - *dropped < 9);  // all held so far is let go, but for part of a frame header
    REQUIRE(got.dropped_heads.size() == 1);
    CHECK(got.dropped_heads[0].size() == (cut == head.size() + 30 ? 2u : 3u));  // its requester's head frames
    CHECK(got.dropped_heads[0][0] == "id");
    // The rest of the dropped message streams past; the next one is decoded.
    auto after = feed(d, rest.substr(*dropped) + input.substr(cut), 7, got);
    REQUIRE(after);
    REQUIRE(got.messages.size() == 1);
    CHECK(got.messages[0] == std::vector<std::string>{"ok"});
  }
}

TEST_CASE("zmtp: peers that break the protocol are refused with a reason") {
  auto refuse = [](SocketType ours, const std::string& input, std::string_view why) {
    zmtp::Decoder d(ours, 1 << 20, 64);
    Collected got;
    auto used = feed(d, input, input.size(), got);
    REQUIRE_FALSE(used);
    CHECK_THAT(used.error().message, Catch::Contains(std::string(why)));
    CHECK(got.messages.empty());
  };
  refuse(SocketType::kDealer, "GET / HTTP/1.1\r\n", "not a ZeroMQ socket");
  std::string zmtp1(10, '\0');
  zmtp1[0] = static_cast<char>(0xff);
  refuse(SocketType::kDealer, zmtp1, "ZMTP 1.0");
  refuse(SocketType::kDealer, peer_greeting(2), "ZMTP 2.x");
  refuse(SocketType::kDealer, peer_greeting(3, "CURVE"), "'CURVE'");
  refuse(SocketType::kDealer, peer_greeting() + ready("PUB"), "cannot talk to a 'PUB'");
  refuse(SocketType::kSub, peer_greeting() + ready("ROUTER"), "cannot talk to a 'ROUTER'");
  refuse(SocketType::kReq, peer_greeting() + command("READY", ""), "cannot talk to a ''");
  refuse(SocketType::kDealer, peer_greeting() + message({"early"}), "before the READY");
  refuse(SocketType::kDealer, peer_greeting() + command("ERROR", "\x06" "denied"), "refused the handshake: denied");
  refuse(SocketType::kDealer, peer_greeting() + command("HELLO", ""), "expected READY");
  refuse(SocketType::kDealer, peer_greeting() + command("READY", "\x0bSocket-Type\x00\x00\x00\x09ROUT"),
         "malformed READY");
  std::string base = peer_greeting() + ready("ROUTER");
  refuse(SocketType::kDealer, base + std::string("\x08\x01x", 3), "bad frame flags");
  refuse(SocketType::kDealer, base + std::string("\x01\x01x", 3) + command("PING", "\x00\x01"), "command frame inside");
  refuse(SocketType::kDealer, base + command("ERROR", "\x03" "bye"), "ERROR");
  std::string huge_command = base + std::string("\x06\x00\x00\x00\x00\x00\x10\x00\x00", 9);
  refuse(SocketType::kDealer, huge_command, "command frame too large");
}

TEST_CASE("zmtp: the peer socket types each of ours accepts") {
  auto accepts = [](SocketType ours, std::string_view peer) {
    zmtp::Decoder d(ours, 1 << 20, 64);
    Collected got;
    std::string input = peer_greeting() + ready(peer);
    return feed(d, input, input.size(), got).has_value() && d.ready();
  };
  CHECK(accepts(SocketType::kDealer, "ROUTER"));
  CHECK(accepts(SocketType::kSub, "PUB"));
  CHECK(accepts(SocketType::kSub, "XPUB"));
  CHECK(accepts(SocketType::kReq, "REP"));
  CHECK(accepts(SocketType::kReq, "ROUTER"));
  CHECK_FALSE(accepts(SocketType::kReq, "DEALER"));
}

TEST_CASE("zmtp: PONG echoes at most 16 bytes of context") {
  std::string out;
  zmtp::append_pong(out, std::string(40, 'c'));
  CHECK(out == command("PONG", std::string(16, 'c')));
}
