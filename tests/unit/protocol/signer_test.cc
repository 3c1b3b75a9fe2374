// SPDX-License-Identifier: BSD-3-Clause
// signer tests: RFC 4231 vectors, jupyter_client's Session.sign, signature checks.
#include "protocol/signer.h"

#include <cctype>
#include <string>

#include <catch2/catch.hpp>

using cellgate::protocol::constant_time_equal;
using cellgate::protocol::Message;
using cellgate::protocol::Signer;

namespace {

std::string repeat(char c, size_t n) { return std::string(n, c); }

std::string range_key() {
  std::string k;
  for (int i = 1; i <= 25; ++i) k.push_back(static_cast<char>(i));
  return k;
}

// jupyter_client Session(key=kSessionKey).sign([header, parent, metadata, content]), computed once
// with /usr/bin/python3 (jupyter_client 7.4.9) and pasted here.
const std::string kSessionKey = "7c1e5a0e-3f3b-4b7e-9d55-1f0e2f6c8a11";
const std::string kSessionHeader =
    R"({"msg_id": "a1b2", "msg_type": "execute_request", "session": "s1", "username": "u", )"
    R"("date": "2026-11-29T19:04:05.123456Z", "version": "5.3"})";
const std::string kSessionContent = R"j({"code": "print(\"h\u00e9llo\")", "silent": false})j";
const std::string kSessionSignature = "58835cc05ac1b4c2745085a58d1461a886c8f341fe8433efb669a8557f5e39bd";

}  // namespace

TEST_CASE("Signer matches the RFC 4231 HMAC-SHA256 vectors", "[protocol][signer]") {
  struct Vector {
    std::string key, data, hex;
  };
  const Vector vectors[] = {
      {repeat('\x0b', 20), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {repeat('\xaa', 20), repeat('\xdd', 50), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {range_key(), repeat('\xcd', 50), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {repeat('\xaa', 131), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {repeat('\xaa', 131),
       "This is a test using a larger than block-size key and a larger than block-size data. The key needs to "
       "be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (const auto& v : vectors) {
    Signer signer(v.key);
    REQUIRE(signer.enabled());
    CHECK(signer.sign(v.data, "", "", "") == v.hex);
    // The MAC runs over the concatenation, so any split of the data gives the same digest.
    const size_t third = v.data.size() / 3;
    CHECK(signer.sign(v.data.substr(0, third), "", v.data.substr(third, third), v.data.substr(2 * third)) == v.hex);
    // The keyed context is duplicated per call, so signing twice must not accumulate state.
    CHECK(signer.sign(v.data, "", "", "") == v.hex);
  }
}

TEST_CASE("Signer agrees with Python's hmac over four parts", "[protocol][signer]") {
  // hmac.new(b"secret-key", b'{"a":1}' b'{}' b'{"m":"\xc3\xa9"}' b'{"c":[1,2]}', sha256).hexdigest()
  Signer signer("secret-key");
  CHECK(signer.sign(R"({"a":1})", "{}", "{\"m\":\"\xc3\xa9\"}", R"({"c":[1,2]})") ==
        "c5fea74963b67afc06e181a24d289db285ed8ea4d5365f560175250038fce9fa");
}

TEST_CASE("Signer signs like jupyter_client's Session.sign", "[protocol][signer]") {
  Signer signer(kSessionKey);
  Message m;
  m.header = kSessionHeader;
  m.parent_header = "{}";
  m.metadata = "{}";
  m.content = kSessionContent;
  CHECK(signer.sign(m) == kSessionSignature);
  CHECK(signer.verify(kSessionSignature, m.header, m.parent_header, m.metadata, m.content));
}

TEST_CASE("Signer rejects short, long, empty and altered signatures", "[protocol][signer]") {
  Signer signer(kSessionKey);
  auto verify = [&](const std::string& sig) { return signer.verify(sig, kSessionHeader, "{}", "{}", kSessionContent); };
  CHECK(verify(kSessionSignature));
  CHECK_FALSE(verify(""));
  CHECK_FALSE(verify(kSessionSignature.substr(0, 63)));
  CHECK_FALSE(verify(kSessionSignature + "0"));
  CHECK_FALSE(verify(kSessionSignature + kSessionSignature));
  std::string upper = kSessionSignature;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK_FALSE(verify(upper));  // Python compares the lowercase hexdigest bytes too
  std::string flipped = kSessionSignature;
  flipped[63] = flipped[63] == 'd' ? 'e' : 'd';
  CHECK_FALSE(verify(flipped));
  // Same signature, different content.
  CHECK_FALSE(signer.verify(kSessionSignature, kSessionHeader, "{}", "{}", "{}"));
}

TEST_CASE("An empty key disables signing", "[protocol][signer]") {
  Signer signer("");
  CHECK_FALSE(signer.enabled());
  CHECK(signer.sign("{}", "{}", "{}", "{}").empty());
  CHECK(signer.verify("", "{}", "{}", "{}", "{}"));
  CHECK(signer.verify("anything", "{}", "{}", "{}", "{}"));
}

TEST_CASE("Signer can be moved", "[protocol][signer]") {
  Signer a("Jefe");
  Signer b(std::move(a));
  CHECK(b.sign("what do ya want for nothing?", "", "", "") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  Signer c("other");
  c = std::move(b);
  CHECK(c.sign("what do ya want for nothing?", "", "", "") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("constant_time_equal compares lengths then bytes", "[protocol][signer]") {
  CHECK(constant_time_equal("", ""));
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "ab"));
  CHECK_FALSE(constant_time_equal("", "a"));
  CHECK_FALSE(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
  CHECK(constant_time_equal(std::string_view("a\0b", 3), std::string_view("a\0b", 3)));
}
