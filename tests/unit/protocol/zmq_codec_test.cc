// SPDX-License-Identifier: BSD-3-Clause
// zmq_codec tests: multipart framing, authentication before copying, hostile frame lists.
#include "protocol/zmq_codec.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

using cellgate::common::Errc;
using cellgate::protocol::decode_zmq;
using cellgate::protocol::encode_zmq;
using cellgate::protocol::kDelimiter;
using cellgate::protocol::kMaxIdentities;
using cellgate::protocol::Message;
using cellgate::protocol::Signer;

namespace {

Message sample() {
  Message m;
  m.identities = {"router-id-1", std::string("\0\x01\x02", 3)};
  m.header = R"({"msg_id": "m1", "msg_type": "comm_msg", "session": "s"})";
  m.parent_header = R"({"msg_id": "p0"})";
  m.metadata = "{}";
  m.content = R"({"data": {}})";
  m.buffers = {std::string("\x00\xff\x10", 3), "", "buffer three"};
  return m;
}

std::vector<std::string_view> views(const std::vector<std::string>& frames) {
  return std::vector<std::string_view>(frames.begin(), frames.end());
}

void check_same(const Message& a, const Message& b) {
  CHECK(a.identities == b.identities);
  CHECK(a.header == b.header);
  CHECK(a.parent_header == b.parent_header);
  CHECK(a.metadata == b.metadata);
  CHECK(a.content == b.content);
  CHECK(a.buffers == b.buffers);
}

}  // namespace

TEST_CASE("zmq frames round trip with identities and buffers", "[protocol][zmq]") {
  Signer signer("key");
  Message m = sample();
  auto frames = encode_zmq(m, signer);
  REQUIRE(frames.size() == 2 + 1 + 5 + 3);
  CHECK(frames[2] == kDelimiter);
  CHECK(frames[3] == signer.sign(m));
  CHECK(frames[4] == m.header);
  auto decoded = decode_zmq(views(frames), signer);
  REQUIRE(decoded);
  check_same(*decoded, m);
}

TEST_CASE("zmq frames without identities or buffers", "[protocol][zmq]") {
  Signer signer("key");
  Message m = sample();
  m.identities.clear();
  m.buffers.clear();
  auto frames = encode_zmq(m, signer);
  REQUIRE(frames.size() == 6);
  auto decoded = decode_zmq(views(frames), signer);
  REQUIRE(decoded);
  check_same(*decoded, m);
}

TEST_CASE("zmq decode rejects a missing delimiter", "[protocol][zmq]") {
  Signer signer("key");
  auto frames = encode_zmq(sample(), signer);
  frames[2] = "<IDS|MSG";
  auto r = decode_zmq(views(frames), signer);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::kBadRequest);
  CHECK(r.error().message.find("delimiter") != std::string::npos);
  CHECK_FALSE(decode_zmq({}, signer));
}

TEST_CASE("zmq decode rejects too few frames", "[protocol][zmq]") {
  Signer signer("key");
  auto frames = encode_zmq(sample(), signer);
  frames.resize(2 + 1 + 4);  // identities, delimiter, signature, header, parent, metadata: no content
  auto r = decode_zmq(views(frames), signer);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("too few") != std::string::npos);
  std::vector<std::string_view> just_delimiter = {kDelimiter};
  CHECK_FALSE(decode_zmq(just_delimiter, Signer("")));
}

TEST_CASE("zmq decode bounds the identities", "[protocol][zmq]") {
  Signer signer("key");
  Message m = sample();
  m.identities.assign(kMaxIdentities, "id");
  REQUIRE(decode_zmq(views(encode_zmq(m, signer)), signer));
  m.identities.push_back("one-too-many");
  auto r = decode_zmq(views(encode_zmq(m, signer)), signer);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("identities") != std::string::npos);
}

TEST_CASE("zmq decode rejects tampered parts and signatures", "[protocol][zmq]") {
  Signer signer("key");
  auto good = encode_zmq(sample(), signer);
  for (size_t i = 3; i < 8; ++i) {  // signature and each of the four signed parts
    auto frames = good;
    frames[i].back() = static_cast<char>(frames[i].back() ^ 1);
    auto r = decode_zmq(views(frames), signer);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("signature") != std::string::npos);
  }
  auto truncated = good;
  truncated[3].pop_back();
  CHECK_FALSE(decode_zmq(views(truncated), signer));
  auto empty = good;
  empty[3].clear();
  CHECK_FALSE(decode_zmq(views(empty), signer));
  // Buffers are not signed (jupyter_client signs the four JSON parts only).
  auto buffer_changed = good;
  buffer_changed.back() = "changed";
  CHECK(decode_zmq(views(buffer_changed), signer));
  // A different key is a bad signature.
  CHECK_FALSE(decode_zmq(views(good), Signer("other")));
}

TEST_CASE("zmq decode of a large message (verified beside the copy) is just as strict", "[protocol][zmq]") {
  Signer signer("key");
  Message big = sample();
  big.content = "{\"text\": \"" + std::string(6u << 20, 'x') + "\"}";
  auto good = encode_zmq(big, signer);
  auto r = decode_zmq(views(good), signer);
  REQUIRE(r);
  check_same(r.value(), big);
  for (size_t i : {3u, 7u}) {  // the signature, and the last byte of the big content
    auto frames = good;
    frames[i].back() = static_cast<char>(frames[i].back() ^ 1);
    auto bad = decode_zmq(views(frames), signer);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message.find("signature") != std::string::npos);
  }
  // Large unsigned buffers alone also take that path; the signed parts still decide.
  Message with_buffer = sample();
  with_buffer.buffers = {std::string(5u << 20, 'b')};
  auto frames = encode_zmq(with_buffer, signer);
  CHECK(decode_zmq(views(frames), signer));
  frames[4].back() = static_cast<char>(frames[4].back() ^ 1);
  CHECK_FALSE(decode_zmq(views(frames), signer));
}

TEST_CASE("zmq decode with signing off accepts any signature", "[protocol][zmq]") {
  Signer off("");
  auto frames = encode_zmq(sample(), off);
  CHECK(frames[3].empty());
  frames[3] = "not-a-signature";
  auto r = decode_zmq(views(frames), off);
  REQUIRE(r);
  CHECK(r->header == sample().header);
}

TEST_CASE("zmq decode takes the first delimiter, as feed_identities does", "[protocol][zmq]") {
  Signer signer("key");
  Message m = sample();
  m.buffers = {std::string(kDelimiter)};
  auto r = decode_zmq(views(encode_zmq(m, signer)), signer);
  REQUIRE(r);
  check_same(*r, m);
}

TEST_CASE("zmq decode rejects signed messages whose dicts are not JSON objects", "[protocol][zmq]") {
  // A kernel holds the key: a valid signature says nothing about what it signed.
  Signer signer("key");
  struct Case {
    std::string Message::*part;
    std::string text;
    const char* name;
  };
  const std::string big_bad = "{\"name\": \"stdout\", \"text\": \"" + std::string(5u << 20, 'x') + "\xff\"}";
  for (const auto& c : {Case{&Message::header, "[]", "header"}, Case{&Message::parent_header, "\"p\"", "parent_header"},
                        Case{&Message::metadata, "not json", "metadata"}, Case{&Message::content, "", "content"},
                        Case{&Message::content, "{\"text\": \"\xff\"}", "content"},
                        Case{&Message::content, big_bad, "content"}}) {
    Message m = sample();
    m.*c.part = c.text;
    auto frames = encode_zmq(m, signer);
    auto r = decode_zmq(views(frames), signer);
    REQUIRE_FALSE(r);
    CHECK(r.error().message == std::string("zmq message's ") + c.name + " is not a JSON object");
  }
  // Valid JSON that is not what nlohmann would take as is, still passes: exponents, lone surrogates.
  Message m = sample();
  m.content = R"({"v": 1e-05, "s": "\ud800"})";
  m.content += std::string(5u << 20, ' ');
  auto frames = encode_zmq(m, signer);
  auto r = decode_zmq(views(frames), signer);
  REQUIRE(r);
  CHECK(r->content == m.content);
}
