// SPDX-License-Identifier: BSD-3-Clause
// fuzz-style tests: mutated valid frames must decode or fail cleanly (run under ASan/UBSan too).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/ws_codec.h"
#include "protocol/zmq_codec.h"
#include "protocol/zmtp.h"
#include "ws_test_util.h"

using cellgate::protocol::decode_ws;
using cellgate::protocol::decode_zmq;
using cellgate::protocol::encode_ws;
using cellgate::protocol::encode_zmq;
using cellgate::protocol::Message;
using cellgate::protocol::Signer;
using cellgate::protocol::WsProtocol;
namespace t = cellgate::protocol::testing;

namespace {

constexpr int kIterations = 20000;

Message seed_message() {
  Message m;
  m.header = R"({"msg_id": "m1", "msg_type": "comm_msg", "session": "s", "date": "2026-01-01T00:00:00.000000Z"})";
  m.parent_header = R"({"msg_id": "p"})";
  m.metadata = R"({"k": [1, 2, {"x": null}]})";
  m.content = R"({"comm_id": "c", "data": {"text": "h\u00e9 \"q\" [x]"}})";
  m.buffers = {std::string("\x00\x01\x02\x03", 4), "second"};
  return m;
}

// Values that make offset arithmetic interesting.
uint64_t interesting(std::mt19937_64& rng, size_t frame_size) {
  const uint64_t picks[] = {0, 1, 5, 6, 7, 8, 56, 64, frame_size, frame_size - 1, frame_size + 1,
                            UINT32_MAX, UINT64_MAX, UINT64_MAX / 8, UINT64_MAX - 7, uint64_t{1} << 63};
  return picks[rng() % std::size(picks)];
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0:  // bit flips
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !s.empty(); ++i) {
        s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
      }
      break;
    case 1:  // truncation
      s.resize(s.empty() ? 0 : rng() % s.size());
      break;
    case 2:  // an 8-byte word (v1 table) or 4-byte word (legacy table) set to a boundary value
      if (s.size() >= 8) {
        size_t at = 8 * (rng() % (s.size() / 8));
        s.replace(at, 8, t::le64(interesting(rng, s.size())));
      }
      break;
    case 3:
      if (s.size() >= 4) {
        size_t at = 4 * (rng() % (s.size() / 4));
        s.replace(at, 4, t::be32(static_cast<uint32_t>(interesting(rng, s.size()))));
      }
      break;
    case 4:  // insert or delete a byte
      if (!s.empty() && rng() % 2) {
        s.erase(rng() % s.size(), 1);
      } else {
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(s.empty() ? 0 : rng() % s.size()),
                 static_cast<char>(rng()));
      }
      break;
    default:  // random bytes over a stretch
      for (size_t i = 0, n = rng() % 16; i < n && !s.empty(); ++i) s[rng() % s.size()] = static_cast<char>(rng());
  }
  return s;
}

// A decoded v1 message must re-encode and decode to the very same parts.
void check_v1_stable(const cellgate::protocol::WsMessage& w) {
  auto again = decode_ws(WsProtocol::kV1, encode_ws(WsProtocol::kV1, w.channel, w.message).data, true);
  REQUIRE(again);
  CHECK(again->message.header == w.message.header);
  CHECK(again->message.content == w.message.content);
  CHECK(again->message.buffers == w.message.buffers);
}

}  // namespace

TEST_CASE("fuzz: mutated websocket frames never crash", "[protocol][fuzz]") {
  std::mt19937_64 rng(0xce11'9a7e);
  const Message m = seed_message();
  const std::string seeds[] = {
      encode_ws(WsProtocol::kV1, "shell", m).data,
      encode_ws(WsProtocol::kLegacy, "shell", m).data,  // binary (has buffers)
      [&] { Message plain = m; plain.buffers.clear(); return encode_ws(WsProtocol::kLegacy, "stdin", plain).data; }(),
  };
  int ok = 0, rejected = 0;
  for (int i = 0; i < kIterations; ++i) {
    const size_t which = static_cast<size_t>(i) % std::size(seeds);
    std::string frame = mutate(seeds[which], rng);
    if (rng() % 4 == 0) frame = mutate(frame, rng);
    const auto protocol = which == 0 ? WsProtocol::kV1 : WsProtocol::kLegacy;
    const bool binary = which != 2;
    auto r = decode_ws(protocol, frame, binary, 16);
    if (r) {
      ++ok;
      CHECK((r->channel == "shell" || r->channel == "control" || r->channel == "stdin"));
      check_v1_stable(*r);
    } else {
      ++rejected;
      CHECK_FALSE(r.error().message.empty());
    }
    // The same bytes under the other protocol and frame type must not crash either.
    (void)decode_ws(protocol == WsProtocol::kV1 ? WsProtocol::kLegacy : WsProtocol::kV1, frame, true, 16);
    (void)decode_ws(WsProtocol::kLegacy, frame, false, 16);
  }
  INFO("ok=" << ok << " rejected=" << rejected);
  CHECK(ok > 0);
  CHECK(rejected > kIterations / 2);
}

TEST_CASE("fuzz: mutated zmq frame lists never crash and never pass a bad signature", "[protocol][fuzz]") {
  std::mt19937_64 rng(0x2e90);
  Message m = seed_message();
  m.identities = {"id-a", "id-b"};
  const Signer signer("fuzz-key");
  const Signer off("");
  const auto seed = encode_zmq(m, signer);
  int ok = 0;
  for (int i = 0; i < kIterations; ++i) {
    std::vector<std::string> frames = seed;
    switch (rng() % 4) {
      case 0: {  // mutate one frame
        size_t k = rng() % frames.size();
        frames[k] = mutate(frames[k], rng);
        break;
      }
      case 1:  // drop frames from the end
        frames.resize(rng() % (frames.size() + 1));
        break;
      case 2:  // drop one frame anywhere
        frames.erase(frames.begin() + static_cast<std::ptrdiff_t>(rng() % frames.size()));
        break;
      default:  // insert extra frames, sometimes delimiters
        for (size_t n = 1 + rng() % 20; n > 0; --n) {
          frames.insert(frames.begin() + static_cast<std::ptrdiff_t>(rng() % (frames.size() + 1)),
                        rng() % 3 ? std::string("<IDS|MSG>") : std::string("junk"));
        }
    }
    std::vector<std::string_view> views(frames.begin(), frames.end());
    auto r = decode_zmq(views, signer);
    if (r) {
      ++ok;
      // Whatever passed carries a valid signature over exactly the parts returned.
      auto re = encode_zmq(*r, signer);
      auto again = decode_zmq(std::vector<std::string_view>(re.begin(), re.end()), signer);
      REQUIRE(again);
      CHECK(again->header == r->header);
      CHECK(signer.sign(*r) == re[r->identities.size() + 1]);
      CHECK(r->identities.size() <= cellgate::protocol::kMaxIdentities);
    }
    (void)decode_zmq(views, off);
  }
  CHECK(ok > 0);  // identity/buffer mutations and no-op edits leave the signature valid
}

TEST_CASE("fuzz: mutated ZMTP byte streams never crash, at any read boundary", "[protocol][fuzz]") {
  namespace zmtp = cellgate::protocol::zmtp;
  std::mt19937_64 rng(0x2a7b);
  // A libzmq ROUTER's side of a connection: greeting, READY, a PING and two Jupyter messages.
  std::string seed(64, '\0');
  seed[0] = static_cast<char>(0xff);
  seed[9] = 0x7f;
  seed[10] = 3;
  seed[11] = 1;
  seed.replace(12, 4, "NULL");
  std::string ready = std::string("\x05READY\x0bSocket-Type\0\0\0\x06ROUTER", 28);
  seed += std::string("\x04", 1) + static_cast<char>(ready.size()) + ready;
  seed += std::string("\x04\x09\x04PING\x00\x01" "ab", 11);
  std::vector<std::string> frames = encode_zmq(seed_message(), Signer("k"));
  frames.push_back(std::string(300, 'L'));  // a long frame
  zmtp::append_message(seed, frames);
  zmtp::append_message(seed, std::vector<std::string>{"last"});
  int complete = 0, refused = 0;
  for (int i = 0; i < kIterations / 4; ++i) {
    std::string bytes = mutate(seed, rng);
    if (rng() % 3 == 0) bytes = mutate(bytes, rng);
    zmtp::Decoder d(zmtp::SocketType::kDealer, 4096, 16);
    std::string buffered;
    bool failed = false;
    size_t delivered = 0;
    for (size_t at = 0; at < bytes.size() && !failed;) {
      size_t step = 1 + rng() % 200;
      buffered.append(bytes, at, step);
      at += step;
      auto used = d.parse(buffered, [&](zmtp::Unit u, const std::vector<std::string_view>& f) {
        if (u == zmtp::Unit::kMessage) {
          CHECK(f.size() <= 16);
          size_t total = 0;
          for (auto v : f) total += v.size();
          CHECK(total <= 4096);
          ++delivered;
        }
        return true;
      });
      if (!used) {
        failed = true;
        CHECK_FALSE(used.error().message.empty());
        break;
      }
      REQUIRE(*used <= buffered.size());
      buffered.erase(0, *used);
      // A decoder never holds more than one unit's worth: what it leaves is below its bounds.
      CHECK(buffered.size() <= 4096 + 16 * 9 + 64 * 1024 + 9);
    }
    if (failed) ++refused;
    else if (delivered == 2) ++complete;
  }
  INFO("complete=" << complete << " refused=" << refused);
  CHECK(complete > 0);
  CHECK(refused > 0);
}
