// SPDX-License-Identifier: BSD-3-Clause
// json_scan tests: the byte scanner answers exactly what nlohmann's parser would, or declines.
#include "protocol/json_scan.h"

#include <random>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "protocol/json_text.h"
#include "protocol/message.h"

using cellgate::protocol::detail::scan_top_level;
using cellgate::protocol::detail::ScanField;
using Kind = ScanField::Kind;
using nlohmann::json;

namespace {

struct Scan {
  bool ok;
  ScanField id, type;
};

Scan scan(std::string_view text) {
  ScanField f[2] = {{"msg_id"}, {"msg_type"}};
  bool ok = scan_top_level(text, f);
  return {ok, f[0], f[1]};
}

constexpr const char* kHeader =
    R"({"msg_id": "4f0c-1", "msg_type": "execute_request", "session": "s", "username": "u",)"
    R"( "date": "2026-01-01T00:00:00.000000Z", "version": "5.3"})";

// One to three random edits (replace, insert, erase) with characters from alphabet.
std::string mutate(std::string text, const std::string& alphabet, std::mt19937& rng) {
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    size_t at = rng() % text.size();
    char c = alphabet[rng() % alphabet.size()];
    switch (rng() % 3) {
      case 0: text[at] = c; break;
      case 1: text.insert(at, 1, c); break;
      default: text.erase(at, 1);
    }
  }
  return text;
}

}  // namespace

TEST_CASE("scan finds top-level strings of an ordinary header", "[protocol][json_scan]") {
  auto s = scan(kHeader);
  REQUIRE(s.ok);
  CHECK(s.id.kind == Kind::kString);
  CHECK(s.id.value == "4f0c-1");
  CHECK(s.type.value == "execute_request");
}

TEST_CASE("scan handles whitespace, nesting and escapes elsewhere", "[protocol][json_scan]") {
  auto s = scan(" \r\n\t{ \"a\" : { \"msg_type\" : \"nested\", \"x\": [1, -2.5, true, false, null, {}, []] } ,"
                "\n\"b\": \"q\\\"uote \\\\ \\u00e9 \\n\", \"msg_type\"\t:\t\"status\" , \"c\": \"é😀\" } \n");
  REQUIRE(s.ok);
  CHECK(s.type.kind == Kind::kString);
  CHECK(s.type.value == "status");  // the nested msg_type is not the top-level one
  CHECK(s.id.kind == Kind::kMissing);
}

TEST_CASE("scan reports non-string values and lets the last duplicate win", "[protocol][json_scan]") {
  auto s = scan(R"({"msg_type": "a", "msg_id": {"k": [1]}, "msg_type": 7})");
  REQUIRE(s.ok);
  CHECK(s.type.kind == Kind::kOther);
  CHECK(s.type.value == "7");
  CHECK(s.id.kind == Kind::kOther);
  CHECK(s.id.value == R"({"k": [1]})");
  ScanField silent[1] = {{"silent"}};
  REQUIRE(scan_top_level(R"({"code": "x = {\"silent\": true}", "silent": true})", silent));
  CHECK(silent[0].value == "true");
  CHECK(cellgate::protocol::peek_true_member(R"({"code": "1", "silent": true})", "silent"));
  CHECK_FALSE(cellgate::protocol::peek_true_member(R"({"code": "\"silent\": true", "silent": false})", "silent"));
}

TEST_CASE("scan declines what it does not answer exactly", "[protocol][json_scan]") {
  for (const char* text : {
           "", "[]", "\"s\"", "{", "{}}", "{} x", R"({"msg_type": "a",})", R"({"msg_type" "a"})",
           R"({"msg_type": "esc\"aped"})",       // an escape in a wanted value
           R"({"msg\u005ftype": "a"})",          // an escaped key might be a wanted one
           R"({"a": "\ud800"})",                 // a lone surrogate: nlohmann rejects it
           R"({"a": 1e400})", R"({"a": 1.5E3})", // exponents
           R"({"a": 12345678901234567890})",     // too long for the integer types
           R"({"a": 01})", R"({"a": -})", R"({"a": 1.})", R"({"a": tru})", R"({"a": "\x"})",
           "{\"a\": \"\x01\"}",                  // a raw control character
           "{\"a\": \"\xc3\"}", "{\"a\": \"\xed\xa0\x80\"}", "{\"a\": \"\xc0\xaf\"}",  // bad UTF-8
       }) {
    INFO(text);
    CHECK_FALSE(scan(text).ok);
  }
  std::string deep = "{\"a\": " + std::string(200, '[') + std::string(200, ']') + "}";
  CHECK_FALSE(scan(deep).ok);
  std::string ok_depth = "{\"a\": " + std::string(60, '[') + std::string(60, ']') + "}";
  CHECK(scan(ok_depth).ok);
}

TEST_CASE("peek_header gives the parser's answer when the scanner declines", "[protocol][json_scan]") {
  auto escaped = cellgate::protocol::peek_header(R"({"msg_id": "a\"b", "msg_type": "exec\u0075te_request"})");
  REQUIRE(escaped);
  CHECK(escaped->msg_id == "a\"b");
  CHECK(escaped->msg_type == "execute_request");
  CHECK_FALSE(cellgate::protocol::peek_header(R"({"msg_type": 1})"));
  CHECK_FALSE(cellgate::protocol::peek_header(R"({"msg_type": "a"} trailing)"));
  CHECK(cellgate::protocol::peek_parent_msg_id("") == "");
  CHECK(cellgate::protocol::peek_parent_msg_id(R"({"msg_id": "p\u0031"})") == "p1");
}

TEST_CASE("scan agrees with nlohmann on mutated headers", "[protocol][json_scan]") {
  std::mt19937 rng(20261129);
  const std::string alphabet = "{}[]\":,\\ ntfu0123456789.-eE\xc3\xa9\x01";
  const std::vector<std::string> seeds = {
      kHeader,
      R"({"msg_id": "m", "msg_type": "stream", "subshell_id": null, "n": [1, 2.5, {"a": "b"}], "t": true})",
      R"({"date": "2026", "msg_type": "a\nb", "msg_id": "\u00e9"})"};
  int answered = 0;
  for (int i = 0; i < 50000; ++i) {
    std::string text = mutate(seeds[static_cast<size_t>(i) % seeds.size()], alphabet, rng);
    auto s = scan(text);
    json parsed = json::parse(text, nullptr, false);
    if (!s.ok) continue;
    ++answered;
    INFO(text);
    REQUIRE(parsed.is_object());
    for (const auto* f : {&s.id, &s.type}) {
      auto it = parsed.find(std::string(f->key));
      if (f->kind == Kind::kMissing) {
        CHECK(it == parsed.end());
      } else if (f->kind == Kind::kString) {
        REQUIRE(it != parsed.end());
        CHECK(*it == std::string(f->value));
      } else {
        REQUIRE(it != parsed.end());
        CHECK(*it == json::parse(f->value));
      }
    }
  }
  CHECK(answered > 5000);  // the fast path is taken for most texts that stay valid
}

TEST_CASE("is_json_object judges the grammar: any number, any \\u escape, UTF-8", "[protocol][json_scan]") {
  using cellgate::protocol::detail::is_json_object;
  for (const char* ok : {R"({})", R"( {"a": 1e-05, "b": -2.5E+300, "c": 12345678901234567890123} )",
                         R"({"s": "\ud800 lone", "t": "\u00e9\n", "n": null, "x": [true, false, {}]})",
                         "{\"u\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"}) {
    INFO(ok);
    CHECK(is_json_object(ok));
  }
  using namespace std::string_view_literals;
  for (std::string_view bad : {""sv, " "sv, "[]"sv, "5"sv, R"("s")"sv, "null"sv, "{"sv, R"({"a":})"sv,
                               R"({"a":1,})"sv, R"({a:1})"sv, R"({"a":1} x)"sv, R"({"a":1e})"sv, R"({"a":01})"sv,
                               R"({"a":"\x"})"sv, R"({"a":"\u12"})"sv, "{\"a\":\"\xff\"}"sv,
                               "{\"a\":\"\xc0\xaf\"}"sv, "{\"a\":\"\xed\xa0\x80\"}"sv,
                               "{\"a\":\"\x01\"}"sv, "{\"a\":1}\0"sv}) {
    INFO(bad);
    CHECK_FALSE(is_json_object(bad));
  }
  // Deeper than the scanner goes: declined by it, but valid_json_object parses it while it is small.
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  CHECK_FALSE(is_json_object(deep));
  CHECK(cellgate::protocol::valid_json_object(deep));
  std::string huge_deep = "{\"a\":" + std::string(2u << 20, '[') + std::string(2u << 20, ']') + "}";
  CHECK_FALSE(cellgate::protocol::valid_json_object(huge_deep));  // not parsed at all over 1 MiB
  CHECK_FALSE(cellgate::protocol::valid_json_object("[" + std::string(100, '[') + std::string(101, ']')));
}

TEST_CASE("is_json_object_text: the scanner's verdict, and nlohmann's past the scanner's depth", "[protocol][json_text]") {
  using cellgate::protocol::detail::is_json_object_text;
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  CHECK(is_json_object_text(deep));
  CHECK_FALSE(is_json_object_text("{\"a\":" + std::string(100, '[') + std::string(99, ']') + "}"));
  CHECK_FALSE(is_json_object_text("{\"a\":" + std::string(100, '[') + "\"\xff\"" + std::string(100, ']') + "}"));
  CHECK(is_json_object_text(R"({"s": "\ud800 lone"})"));  // as Python's json reads it
  CHECK_FALSE(is_json_object_text("{\"a\":\"\xed\xa0\x80\"}"));
  CHECK_FALSE(is_json_object_text("[]"));
}

TEST_CASE("is_json_object agrees with nlohmann on mutated objects", "[protocol][json_scan]") {
  using cellgate::protocol::detail::is_json_object;
  std::mt19937 rng(20261130);
  const std::string alphabet = "{}[]\":,\\ ntfu0123456789.-+eE\xc3\xa9\x01\xff";
  const std::vector<std::string> seeds = {
      kHeader, R"({"data": {"text/plain": "1e-05", "v": [1e-05, 2.5E3, -0.0]}, "metadata": {}})",
      R"({"name": "stdout", "text": "a\u00e9\tb"})"};
  int valid = 0;
  for (int i = 0; i < 50000; ++i) {
    std::string text = mutate(seeds[static_cast<size_t>(i) % seeds.size()], alphabet, rng);
    // nlohmann is stricter in two ways: it wants \u surrogates paired (none of these have any), and
    // it refuses numbers that overflow a double, which the grammar allows (Python reads inf).
    bool want = false;
    try {
      want = json::parse(text).is_object();
    } catch (const json::out_of_range& e) {
      want = e.id == 406 && json::parse(std::regex_replace(text, std::regex("[eE][+-]?[0-9]{3,}"), "e0"), nullptr, false).is_object();
    } catch (const json::exception&) {
    }
    INFO(text);
    CHECK(is_json_object(text) == want);
    valid += want;
  }
  CHECK(valid > 5000);
}

TEST_CASE("the scanner finds every byte that needs a look, wherever it falls in a word", "[protocol][json_scan]") {
  using cellgate::protocol::detail::is_json_object;
  for (std::string special : {"\"", "\\", "\\n", "\x01", "\x1f", " ", "\x7f", "\xc3\xa9", "\xff", "\xc3", "\\u00e9"}) {
    for (size_t at = 0; at <= 40; ++at) {
      std::string text = "{\"k\": \"" + std::string(at, 'a') + special + std::string(40 - at, 'b') + "\"}";
      json parsed = json::parse(text, nullptr, false);
      INFO(text);
      CHECK(is_json_object(text) == (!parsed.is_discarded() && parsed.is_object()));
    }
  }
}

TEST_CASE("parse_untrusted_json refuses a tree too deep to copy or dump", "[protocol][json_text]") {
  using cellgate::protocol::parse_untrusted_json;
  using cellgate::protocol::detail::kMaxJsonDepth;
  auto nested = [](size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  REQUIRE(parse_untrusted_json(R"({"a": [1, {"b": "["}]})") == json::parse(R"({"a": [1, {"b": "["}]})"));
  REQUIRE(parse_untrusted_json(nested(kMaxJsonDepth)).is_array());
  REQUIRE(parse_untrusted_json(nested(kMaxJsonDepth + 1)).is_discarded());
  // 100k levels in 200 KB: the tree nlohmann would build is what overflowed the gateway's stack.
  REQUIRE(parse_untrusted_json(R"({"env": )" + nested(100000) + "}").is_discarded());
  REQUIRE(parse_untrusted_json("{").is_discarded());
  REQUIRE(parse_untrusted_json("\xff").is_discarded());
}
