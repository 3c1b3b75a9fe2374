// SPDX-License-Identifier: BSD-3-Clause
// render tests: ANSI stripping and how execute/read/process answers become MCP content.
#include "mcp/render.h"

#include <catch2/catch.hpp>

namespace cellgate::mcp {
namespace {

using nlohmann::json;

TEST_CASE("strip_ansi removes CSI, OSC and two-byte escapes only", "[mcp]") {
  CHECK(strip_ansi("\x1b[0;31mZeroDivisionError\x1b[0m: x") == "ZeroDivisionError: x");
  CHECK(strip_ansi("a\x1b]0;title\x07" "b") == "ab");
  CHECK(strip_ansi("a\x1b]8;;http://x\x1b\\link") == "alink");
  CHECK(strip_ansi("\x1b" "cplain [brackets] stay") == "plain [brackets] stay");
  CHECK(strip_ansi("cut\x1b[31") == "cut");
  CHECK(strip_ansi("trailing\x1b") == "trailing");
  CHECK(strip_ansi("ünïcode") == "ünïcode");
}

TEST_CASE("execute: streams merge, PNG becomes an image, its repr is dropped", "[mcp]") {
  json answer = json::parse(R"({"status":"ok","execution_count":3,"outputs":[
    {"type":"stream","name":"stdout","text":"a\n"},
    {"type":"stream","name":"stderr","text":"warn\n"},
    {"type":"display_data","data":{"image/png":"iVBOR\nw0=","text/plain":"<Figure>"},"metadata":{}},
    {"type":"execute_result","data":{"text/plain":"42"},"metadata":{},"execution_count":3}],
    "truncated":false})");
  json r = render_execute(answer);
  CHECK(r["isError"] == false);
  REQUIRE(r["content"].size() == 3);
  CHECK(r["content"][0] == json{{"type", "text"}, {"text", "a\nwarn\n"}});
  CHECK(r["content"][1] == json{{"type", "image"}, {"data", "iVBORw0="}, {"mimeType", "image/png"}});
  CHECK(r["content"][2] == json{{"type", "text"}, {"text", "42"}});
}

TEST_CASE("execute: JPEG is an image too, and markdown wins over plain text", "[mcp]") {
  json r = render_execute({{"status", "ok"},
                           {"outputs", {{{"type", "display_data"}, {"data", {{"image/jpeg", {"/9j/", "4AAQ"}}}}},
                                        {{"type", "execute_result"},
                                         {"data", {{"text/markdown", "**x**"}, {"text/plain", "x"}}}}}}});
  REQUIRE(r["content"].size() == 2);
  CHECK(r["content"][0] == json{{"type", "image"}, {"data", "/9j/4AAQ"}, {"mimeType", "image/jpeg"}});
  CHECK(r["content"][1]["text"] == "**x**");
}

TEST_CASE("execute: errors carry ename, evalue and a plain traceback", "[mcp]") {
  json answer = {{"status", "error"},
                 {"outputs",
                  {{{"type", "error"}, {"ename", "ZeroDivisionError"}, {"evalue", "division by zero"},
                    {"traceback", {"\x1b[0;31m---------\x1b[0m", "\x1b[0;32m----> 1\x1b[0m 1/0"}}}}}};
  json r = render_execute(answer);
  CHECK(r["isError"] == true);
  CHECK(r["content"][0]["text"] == "ZeroDivisionError: division by zero\nTraceback:\n---------\n----> 1 1/0");
}

TEST_CASE("execute: timeout, dead kernel, truncation, workspace changes, no output", "[mcp]") {
  json timeout = render_execute({{"status", "timeout"}, {"outputs", json::array()}});
  CHECK(timeout["isError"] == true);
  CHECK(timeout["content"][0]["text"].get<std::string>().find("timed out") != std::string::npos);
  CHECK(render_execute({{"status", "dead"}})["content"][0]["text"].get<std::string>().find("died") != std::string::npos);
  json cut = render_execute({{"status", "ok"}, {"outputs", json::array()}, {"truncated", true}});
  CHECK(cut["content"][0]["text"].get<std::string>().find("truncated") != std::string::npos);
  json changes = render_execute(
      {{"status", "ok"}, {"changes", {{"added", {"out.csv"}}, {"changed", json::array()}, {"removed", {"x", "y"}}}}});
  CHECK(changes["content"][0]["text"] == "[workspace added: out.csv; removed: x, y]");
  json snapped = render_execute({{"status", "ok"},
                                 {"workspace",
                                  {{"workspace", "default"}, {"snapshot", "00000007-3fa1c2d0"}, {"new_snapshot", true},
                                   {"added", {"plot.png"}}, {"changed", {"data.csv"}}, {"removed", json::array()}}}});
  CHECK(snapped["content"][0]["text"] ==
        "[workspace default added: plot.png; changed: data.csv (snapshot 00000007-3fa1c2d0)]");
  json unchanged = render_execute({{"status", "ok"}, {"workspace", {{"workspace", "w"}, {"added", json::array()}}}});
  CHECK(unchanged["content"][0]["text"] == "[ok, no output]");
  CHECK(render_execute({{"status", "ok"}, {"workspace", {{"error", "snapshot failed: disk full"}}}})["content"][0]["text"] ==
        "[workspace: snapshot failed: disk full]");
  CHECK(render_execute({{"status", "ok"}, {"outputs", json::array()}})["content"][0]["text"] == "[ok, no output]");
  json garbage = render_execute({{"status", "ok"}, {"outputs", {1, "x", {{"type", 3}}}}});
  CHECK(garbage["isError"] == false);
}

TEST_CASE("read says when more lines exist", "[mcp]") {
  json whole = render_read({{"content", "a\nb\n"}, {"offset", 0}, {"lines", 2}, {"total_lines", 2}, {"truncated", false}});
  CHECK(whole["content"][0]["text"] == "a\nb\n");
  json page = render_read({{"content", "b\n"}, {"offset", 1}, {"lines", 1}, {"total_lines", 5}, {"truncated", false}});
  CHECK(page["content"][0]["text"] == "b\n[showing lines 2-2 of 5; next offset 2]");
}

TEST_CASE("process: a timeout is an error but a failing exit code is not", "[mcp]") {
  json killed = render_process({{"exit_code", nullptr}, {"stdout", ""}, {"stderr", ""}, {"timed_out", true}});
  CHECK(killed["isError"] == true);
  CHECK(killed["content"][0]["text"].get<std::string>().find("timed out") != std::string::npos);
  CHECK(render_process({{"exit_code", 2}, {"timed_out", false}})["isError"] == false);
}

TEST_CASE("HTTP errors fall back to reason or raw text", "[mcp]") {
  CHECK(render_http_error(403, {{"reason", "Forbidden"}})["content"][0]["text"] == "Error (HTTP 403): Forbidden");
  CHECK(render_http_error(502, "Bad Gateway")["content"][0]["text"] == "Error (HTTP 502): Bad Gateway");
  CHECK(render_http_error(500, nullptr)["isError"] == true);
}

}  // namespace
}  // namespace cellgate::mcp
