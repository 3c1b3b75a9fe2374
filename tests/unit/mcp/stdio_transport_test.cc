// SPDX-License-Identifier: BSD-3-Clause
// stdio_transport tests: line framing, ordering, blank/CRLF lines, over-long lines, a last line without '\n'.
#include "mcp/stdio_transport.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sstream>

#include <catch2/catch.hpp>

#include "common/unique_fd.h"
#include "fake_rest_api.h"

namespace cellgate::mcp {
namespace {

using nlohmann::json;

common::UniqueFd memfd_with(const std::string& data) {
  common::UniqueFd fd(::memfd_create("mcp-test", MFD_CLOEXEC));
  REQUIRE(fd.valid());
  REQUIRE(::write(fd.get(), data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  REQUIRE(::lseek(fd.get(), 0, SEEK_SET) == 0);
  return fd;
}

// Runs the transport over input and returns the reply lines.
std::vector<json> serve(const std::string& input, int* rc = nullptr) {
  McpServer server(std::make_shared<testing::FakeRestApi>());
  auto in = memfd_with(input);
  auto out = memfd_with("");
  int code = run_stdio(server, in.get(), out.get(), "tok");
  if (rc) *rc = code;
  std::string text;
  char buf[65536];
  REQUIRE(::lseek(out.get(), 0, SEEK_SET) == 0);
  for (ssize_t n; (n = ::read(out.get(), buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  std::vector<json> lines;
  std::istringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(json::parse(line));
  CHECK((text.empty() || text.back() == '\n'));
  return lines;
}

TEST_CASE("stdio: one reply line per request, in order, notifications and blank lines are silent", "[mcp]") {
  int rc = -1;
  auto lines = serve(
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2024-11-05\"}}\r\n"
      "\n   \n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}",
      &rc);
  CHECK(rc == 0);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["result"]["protocolVersion"] == "2024-11-05");
  CHECK(lines[1]["id"] == 2);
  CHECK(lines[1]["result"]["tools"].size() == 12);
  CHECK(lines[2]["id"] == 3);
}

TEST_CASE("stdio: an over-long line is answered with a parse error and skipped", "[mcp]") {
  std::string input = std::string(kMaxMessageBytes + 100, 'x') + "\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n";
  auto lines = serve(input);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["error"]["code"] == -32700);
  CHECK(lines[0]["id"].is_null());
  CHECK(lines[1]["id"] == 7);
}

TEST_CASE("stdio: garbage lines get parse errors and the session goes on", "[mcp]") {
  auto lines = serve("not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["error"]["code"] == -32700);
  CHECK(lines[1]["result"] == json::object());
}

TEST_CASE("stdio: a closed output ends the loop with 1", "[mcp]") {
  McpServer server(std::make_shared<testing::FakeRestApi>());
  auto in = memfd_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
  int pipefd[2];
  REQUIRE(::pipe2(pipefd, O_CLOEXEC) == 0);
  ::close(pipefd[0]);
  common::UniqueFd write_end(pipefd[1]);
  ::signal(SIGPIPE, SIG_IGN);
  CHECK(run_stdio(server, in.get(), write_end.get(), "tok") == 1);
}

}  // namespace
}  // namespace cellgate::mcp
