// SPDX-License-Identifier: BSD-3-Clause
// session_table: one token's sessions never evict another token's.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "mcp/server.h"
#include "mcp/session_table.h"

using cellgate::mcp::McpSession;
using cellgate::mcp::SessionTable;

TEST_CASE("a token past its own cap loses its own oldest session, never another token's") {
  SessionTable table;
  const std::string alice = table.add(std::make_shared<McpSession>(), "alice-token");
  std::vector<std::string> mallory;
  for (size_t i = 0; i < SessionTable::kMaxPerToken * 4; ++i)
    mallory.push_back(table.add(std::make_shared<McpSession>(), "mallory-token"));
  REQUIRE(table.find(alice, "alice-token") != nullptr);
  CHECK(table.size() == SessionTable::kMaxPerToken + 1);
  // Mallory's newest are kept, the oldest went.
  CHECK(table.find(mallory.back(), "mallory-token") != nullptr);
  CHECK(table.find(mallory.front(), "mallory-token") == nullptr);
}

TEST_CASE("a full table refuses a new session rather than evict another token's") {
  SessionTable table;
  for (size_t i = 0; i < SessionTable::kMaxSessions; ++i)
    REQUIRE(!table.add(std::make_shared<McpSession>(), "token-" + std::to_string(i)).empty());
  CHECK(table.add(std::make_shared<McpSession>(), "newcomer").empty());
  CHECK(table.size() == SessionTable::kMaxSessions);
}
