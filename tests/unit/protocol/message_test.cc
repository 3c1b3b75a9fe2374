// SPDX-License-Identifier: BSD-3-Clause
// message tests: header peeking and the headers we originate.
#include "protocol/message.h"

#include <regex>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using cellgate::protocol::make_header;
using cellgate::protocol::make_message;
using cellgate::protocol::peek_header;
using cellgate::protocol::peek_parent_msg_id;
using nlohmann::json;

TEST_CASE("peek_header extracts the routing fields", "[protocol][message]") {
  auto f = peek_header(R"({"msg_id": "m1", "msg_type": "execute_request", "session": "s1", "date": "x"})");
  REQUIRE(f);
  CHECK(f->msg_id == "m1");
  CHECK(f->msg_type == "execute_request");
  CHECK(f->session == "s1");

  auto partial = peek_header(R"({"msg_type": "status", "msg_id": 5})");
  REQUIRE(partial);
  CHECK(partial->msg_id.empty());  // present but not a string counts as missing
  CHECK(partial->session.empty());
}

TEST_CASE("peek_header rejects what is not a header", "[protocol][message]") {
  CHECK_FALSE(peek_header(""));
  CHECK_FALSE(peek_header("not json"));
  CHECK_FALSE(peek_header("[]"));
  CHECK_FALSE(peek_header(R"({"msg_id": "m1"})"));
  CHECK_FALSE(peek_header(R"({"msg_type": 3})"));
  CHECK_FALSE(peek_header(R"({"msg_type": "a"} trailing)"));
  CHECK_FALSE(peek_header("{\"msg_type\": \"\xff\"}"));  // invalid UTF-8
}

TEST_CASE("peek_parent_msg_id", "[protocol][message]") {
  CHECK(peek_parent_msg_id(R"({"msg_id": "p1", "msg_type": "x"})") == "p1");
  CHECK(peek_parent_msg_id("{}").empty());
  CHECK(peek_parent_msg_id("").empty());
  CHECK(peek_parent_msg_id("[1]").empty());
  CHECK(peek_parent_msg_id(R"({"msg_id": null})").empty());
}

TEST_CASE("make_header writes the jupyter_client fields in order", "[protocol][message]") {
  std::string text = make_header("kernel_info_request", "sess", "user", "id-1");
  // Order as jupyter_client's msg_header(): msg_id, msg_type, session, username, date, version.
  std::regex shape(
      R"re(\{"msg_id":"id-1","msg_type":"kernel_info_request","session":"sess","username":"user",)re"
      R"re("date":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z","version":"5\.3"\})re");
  CHECK(std::regex_match(text, shape));
  auto f = peek_header(text);
  REQUIRE(f);
  CHECK(f->msg_type == "kernel_info_request");
}

TEST_CASE("make_header escapes and survives hostile strings", "[protocol][message]") {
  std::string text = make_header("t", "a\"b\\c\n", "\xff\xfe", "id");
  json h = json::parse(text, nullptr, false);
  REQUIRE(h.is_object());
  CHECK(h["session"] == "a\"b\\c\n");
  CHECK(h["username"].get<std::string>() == "\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFD replacements
}

TEST_CASE("make_message builds a fresh message", "[protocol][message]") {
  auto a = make_message("status", "sess", R"({"execution_state": "idle"})", R"({"msg_id": "p"})");
  auto b = make_message("status", "sess", "{}");
  auto fa = peek_header(a.header);
  auto fb = peek_header(b.header);
  REQUIRE(fa);
  REQUIRE(fb);
  CHECK(fa->msg_type == "status");
  CHECK(fa->session == "sess");
  CHECK(fa->msg_id.size() == 36);
  CHECK(fa->msg_id != fb->msg_id);
  CHECK(a.parent_header == R"({"msg_id": "p"})");
  CHECK(a.metadata == "{}");
  CHECK(b.parent_header == "{}");
  CHECK(a.content == R"({"execution_state": "idle"})");
  CHECK(a.identities.empty());
  CHECK(a.buffers.empty());
}
