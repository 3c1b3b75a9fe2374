// SPDX-License-Identifier: BSD-3-Clause
// tools tests: each tool's REST call (method, path, body) and how its answer and errors are rendered.
#include "mcp/tools.h"

#include <catch2/catch.hpp>

#include "fake_rest_api.h"

namespace cellgate::mcp {
namespace {

using nlohmann::json;
using testing::FakeRestApi;

std::string text_of(const json& result) {
  std::string all;
  for (const auto& c : result["content"])
    if (c["type"] == "text") all += c["text"].get<std::string>();
  return all;
}

json run(FakeRestApi& b, const std::string& name, const json& args) {
  auto r = call_tool(b, "tok", name, args);
  REQUIRE(r);
  return r.value();
}

TEST_CASE("list_kernels and start_kernel", "[mcp]") {
  FakeRestApi b;
  b.on("GET api/kernels", 200, json::array());
  CHECK(text_of(run(b, "list_kernels", json::object())).find("No kernels") != std::string::npos);
  b.on("GET api/kernels", 200, json::parse(R"([{"id":"k1","name":"python3","execution_state":"idle"}])"));
  json listed = run(b, "list_kernels", json::object());
  CHECK(text_of(listed).find("kernel_id: k1") != std::string::npos);
  CHECK(listed["isError"] == false);

  b.on("POST api/kernels", 201, {{"id", "k2"}, {"name", "python3"}, {"execution_state", "idle"}});
  json started = run(b, "start_kernel", {{"name", "python3"}, {"workspace", "proj"}});
  CHECK(text_of(started).find("kernel_id: k2") != std::string::npos);
  auto seen = b.seen().back();
  CHECK(seen.call.method == "POST");
  CHECK(seen.call.body == json{{"name", "python3"}, {"workspace", "proj"}});
  CHECK(seen.token == "tok");
}

TEST_CASE("execute posts the code and escapes the kernel id in the path", "[mcp]") {
  FakeRestApi b;
  b.on("POST api/kernels/a%2Fb%20c/execute", 200,
       {{"status", "ok"}, {"outputs", {{{"type", "stream"}, {"name", "stdout"}, {"text", "42\n"}}}}});
  json r = run(b, "execute", {{"kernel_id", "a/b c"}, {"code", "print(42)"}, {"timeout", 5}});
  CHECK(text_of(r) == "42\n");
  auto call = b.seen().back().call;
  CHECK(call.body == json{{"code", "print(42)"}, {"timeout", 5}});
  CHECK(call.timeout == std::chrono::seconds(35));  // the tool's timeout plus slack for interrupt and reply
}

TEST_CASE("file tools map to /tools/*", "[mcp]") {
  FakeRestApi b;
  b.on("POST api/kernels/k/tools/read", 200,
       {{"path", "a.txt"}, {"content", "x\n"}, {"offset", 0}, {"lines", 1}, {"total_lines", 1}, {"truncated", false}});
  CHECK(text_of(run(b, "read", {{"kernel_id", "k"}, {"path", "a.txt"}, {"offset", 0}, {"limit", 10}})) == "x\n");
  CHECK(b.seen().back().call.body == json{{"path", "a.txt"}, {"offset", 0}, {"limit", 10}});

  b.on("POST api/kernels/k/tools/write", 200, {{"path", "a.txt"}, {"bytes", 3}});
  CHECK(text_of(run(b, "write", {{"kernel_id", "k"}, {"path", "a.txt"}, {"content", ""}})) == "Wrote 3 bytes to a.txt.");
  CHECK(b.seen().back().call.body == json{{"path", "a.txt"}, {"content", ""}});

  b.on("POST api/kernels/k/tools/edit", 200, {{"path", "a.txt"}, {"replacements", 2}});
  json edited = run(b, "edit", {{"kernel_id", "k"}, {"path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"},
                                {"replace_all", true}});
  CHECK(text_of(edited).find("2 replacement") != std::string::npos);
  CHECK(b.seen().back().call.body ==
        json{{"path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}, {"replace_all", true}});
  run(b, "edit", {{"kernel_id", "k"}, {"path", "a.txt"}, {"diff", "@@ -1 +1 @@\n-x\n+y\n"}});
  CHECK(b.seen().back().call.body == json{{"path", "a.txt"}, {"diff", "@@ -1 +1 @@\n-x\n+y\n"}});

  b.on("POST api/kernels/k/tools/process", 200,
       {{"exit_code", 1}, {"stdout", "out"}, {"stderr", "err"}, {"timed_out", false}, {"truncated", false}});
  json proc = run(b, "process", {{"kernel_id", "k"}, {"command", "sh"}, {"args", {"-c", "exit 1"}}, {"stdin", "in"}});
  CHECK(text_of(proc) == "exit code: 1\n--- stdout ---\nout\n--- stderr ---\nerr");
  CHECK(proc["isError"] == false);
  CHECK(b.seen().back().call.body == json{{"command", "sh"}, {"args", {"-c", "exit 1"}}, {"stdin", "in"}});
}

TEST_CASE("workspace tools map to /api/workspaces/{ws}/snapshots", "[mcp]") {
  FakeRestApi b;
  b.on("POST api/workspaces/proj/snapshots", 201, {{"id", "s1"}, {"label", "before"}});
  CHECK(text_of(run(b, "snapshot", {{"workspace", "proj"}, {"label", "before"}})).find("snapshot_id: s1") !=
        std::string::npos);
  CHECK(b.seen().back().call.body == json{{"label", "before"}});
  b.on("POST api/workspaces/proj/snapshots/s1/restore", 200,
       {{"restored", "s1"}, {"added", {"a.txt"}}, {"changed", json::array()}, {"removed", {"b.txt", "c.txt"}}});
  std::string restored = text_of(run(b, "restore", {{"workspace", "proj"}, {"snapshot_id", "s1"}}));
  CHECK(restored.find("Restored snapshot s1.") == 0);
  CHECK(restored.find("added by the restore (1): a.txt") != std::string::npos);
  CHECK(restored.find("removed by the restore (2): b.txt, c.txt") != std::string::npos);
  b.on("GET api/workspaces/proj/snapshots", 200, json::array());
  CHECK(text_of(run(b, "list_snapshots", {{"workspace", "proj"}})).find("No snapshots") != std::string::npos);
}

TEST_CASE("publish_artifact posts to /api/workspaces/{ws}/artifacts", "[mcp]") {
  FakeRestApi b;
  b.on("POST api/workspaces/proj/artifacts", 201,
       {{"id", "a1"}, {"name", "r.csv"}, {"size", 3}, {"media_type", "text/csv"}, {"sha256", "ab"},
        {"kernel_id", "k1"}, {"execution_count", 2}});
  std::string text = text_of(run(b, "publish_artifact", {{"workspace", "proj"}, {"path", "out/r.csv"}}));
  CHECK(text.find("artifact_id: a1") != std::string::npos);
  CHECK(text.find("made by kernel k1 execution 2") != std::string::npos);
  CHECK(b.seen().back().call.body == json{{"path", "out/r.csv"}});
  run(b, "publish_artifact", {{"workspace", "proj"}, {"path", "r.csv"}, {"name", "report.csv"}});
  CHECK(b.seen().back().call.body == json{{"path", "r.csv"}, {"name", "report.csv"}});
  CHECK(!call_tool(b, "tok", "publish_artifact", {{"workspace", "proj"}}));  // path is required
}

TEST_CASE("HTTP errors and an unreachable server are tool errors with the message", "[mcp]") {
  FakeRestApi b;
  b.on("POST api/kernels/k/tools/edit", 409, {{"reason", "Conflict"}, {"message", "old_string not found in a.txt"}});
  json conflict = run(b, "edit", {{"kernel_id", "k"}, {"path", "a.txt"}, {"old_string", "x"}, {"new_string", "y"}});
  CHECK(conflict["isError"] == true);
  CHECK(text_of(conflict) == "Error (HTTP 409): old_string not found in a.txt");

  json missing = run(b, "execute", {{"kernel_id", "gone"}, {"code", "1"}});
  CHECK(missing["isError"] == true);
  CHECK(text_of(missing).find("HTTP 404") != std::string::npos);

  b.unreachable("cellgate at 127.0.0.1:1 unreachable (connect: Connection refused)");
  json down = run(b, "list_kernels", json::object());
  CHECK(down["isError"] == true);
  CHECK(text_of(down).find("Connection refused") != std::string::npos);
}

}  // namespace
}  // namespace cellgate::mcp
