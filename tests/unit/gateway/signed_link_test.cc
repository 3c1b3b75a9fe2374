// SPDX-License-Identifier: BSD-3-Clause
// signed_link tests: a link holds until it expires, any change to it is refused, and the key file is
// made once, private, and refused when unfit.
#include "gateway/signed_link.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <catch2/catch.hpp>

#include "scratch_dir.h"

namespace cellgate::gateway {
namespace {

const std::string kKey(32, 'k');

TEST_CASE("a link holds until it expires and is then expired rather than forged", "[gateway]") {
  LinkSigner s(kKey);
  const std::string sig = s.sign("abc", 2000);
  CHECK(sig.size() == 64);
  CHECK(s.check("abc", "2000", sig, 1999) == LinkCheck::kValid);
  CHECK(s.check("abc", "2000", sig, 2000) == LinkCheck::kExpired);
  CHECK(s.check("abc", "2000", sig, 9999) == LinkCheck::kExpired);
}

TEST_CASE("a link changed in any part is refused", "[gateway]") {
  LinkSigner s(kKey);
  const std::string sig = s.sign("abc", 2000);
  CHECK(s.check("abd", "2000", sig, 1) == LinkCheck::kBadSignature);   // another artifact
  CHECK(s.check("abc", "2001", sig, 1) == LinkCheck::kBadSignature);   // a later expiry
  std::string flipped = sig;
  flipped[63] = flipped[63] == '0' ? '1' : '0';
  CHECK(s.check("abc", "2000", flipped, 1) == LinkCheck::kBadSignature);
  CHECK(LinkSigner(std::string(32, 'j')).check("abc", "2000", sig, 1) == LinkCheck::kBadSignature);  // another key
  // Not of the form: refused before any HMAC is computed.
  CHECK(s.check("abc", "02000", sig, 1) == LinkCheck::kMalformed);     // non-canonical, else a second valid form
  CHECK(s.check("abc", "", sig, 1) == LinkCheck::kMalformed);
  CHECK(s.check("abc", "-5", sig, 1) == LinkCheck::kMalformed);
  CHECK(s.check("abc", "9999999999999999999", sig, 1) == LinkCheck::kMalformed);  // 19 digits
  CHECK(s.check("abc", "2000", sig.substr(1), 1) == LinkCheck::kMalformed);
  std::string upper = sig;
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'f' ? c - 32 : c);
  if (upper != sig) CHECK(s.check("abc", "2000", upper, 1) == LinkCheck::kMalformed);
  CHECK(s.check("abc", "2000", "", 1) == LinkCheck::kMalformed);
}

TEST_CASE("the key file is made once with mode 0600 and kept", "[gateway]") {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/link.key";
  auto first = LinkSigner::load_or_create(path);
  REQUIRE(first);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_size == 32);
  auto again = LinkSigner::load_or_create(path);
  REQUIRE(again);
  CHECK(again->sign("a", 1) == first->sign("a", 1));  // links survive a restart

  const std::string short_key = dir.path() + "/short.key";
  std::ofstream(short_key) << "too short";
  auto refused = LinkSigner::load_or_create(short_key);
  REQUIRE(!refused);
  CHECK(refused.error().code == common::Errc::kBadRequest);
  const std::string link = dir.path() + "/link-to-key";
  REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
  CHECK(!LinkSigner::load_or_create(link));  // never followed
}

}  // namespace
}  // namespace cellgate::gateway
