// SPDX-License-Identifier: BSD-3-Clause
// audit_log_test: rows and JSON lines, redaction of secrets, size bounds, append-only.
#include "state/audit_log.h"

#include <sstream>

#include <catch2/catch.hpp>

#include "state/database.h"
#include "state_test_util.h"
#include "test_database.h"

using namespace cellgate::state;
using cellgate::state::test::read_file;
using cellgate::state::test::TempDir;
using cellgate::state::test::TestDatabase;
using nlohmann::json;

namespace {

std::vector<json> json_lines(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    out.push_back(json::parse(line, nullptr, false));
    REQUIRE_FALSE(out.back().is_discarded());
  }
  return out;
}

}  // namespace

TEST_CASE("each event is a row and a JSON line with every field", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  auto log = AuditLog::open(*db, tdb.dir());
  REQUIRE(log);
  CHECK(log->file_path() == tdb.dir() + "/audit.log");
  REQUIRE(log->record({"alice", "start", "kernel", "k-1", {{"kernelspec", "python3"}}, true}));
  REQUIRE(log->record({"bob", "delete", "workspace", "scratch", json::object(), false}));

  auto lines = json_lines(log->file_path());
  REQUIRE(lines.size() == 2);
  const json& first = lines[0];
  CHECK(first["user"] == "alice");
  CHECK(first["action"] == "start");
  CHECK(first["object_kind"] == "kernel");
  CHECK(first["object_id"] == "k-1");
  CHECK(first["detail"] == json{{"kernelspec", "python3"}});
  CHECK(first["result"] == "ok");
  const std::string time = first["time"];
  CHECK(time.size() == 27);  // 2026-11-29T19:00:00.000000Z
  CHECK(time.back() == 'Z');
  CHECK(lines[1]["result"] == "error");

  auto rows = log->recent(10);
  REQUIRE(rows);
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].event.user == "bob");  // newest first
  CHECK_FALSE((*rows)[0].event.ok);
  CHECK((*rows)[1].time == time);
  CHECK((*rows)[1].event.detail == json{{"kernelspec", "python3"}});
  CHECK((*rows)[1].seq < (*rows)[0].seq);
  CHECK(log->recent(1)->size() == 1);
}

TEST_CASE("a reopened log appends to the same file", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  {
    auto log = AuditLog::open(*db, tdb.dir());
    REQUIRE(log);
    REQUIRE(log->record({"a", "start", "kernel", "1", json::object(), true}));
  }
  auto log = AuditLog::open(*db, tdb.dir());
  REQUIRE(log);
  REQUIRE(log->record({"a", "stop", "kernel", "1", json::object(), true}));
  auto lines = json_lines(log->file_path());
  REQUIRE(lines.size() == 2);
  CHECK(lines[1]["action"] == "stop");
}

TEST_CASE("secrets in the detail never reach the row or the file", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  auto log = AuditLog::open(*db, tdb.dir());
  REQUIRE(log);
  const std::string secret = "6f1ed002ab5595859014ebf0951522d9";
  json detail = {{"token", secret},
                 {"nested", {{"Authorization", "token " + secret}, {"list", {{{"hmac_key", secret}}}}}},
                 {"password", secret},
                 {"kernelspec", "python3"}};
  REQUIRE(log->record({"alice", "start", "kernel", "k", detail, true}));
  CHECK(read_file(log->file_path()).find(secret) == std::string::npos);
  CHECK(test::read_all_files(tdb.dir()).find(secret) == std::string::npos);
  auto line = json_lines(log->file_path()).at(0);
  CHECK(line["detail"]["token"] == "[redacted]");
  CHECK(line["detail"]["nested"]["Authorization"] == "[redacted]");
  CHECK(line["detail"]["nested"]["list"][0]["hmac_key"] == "[redacted]");
  CHECK(line["detail"]["kernelspec"] == "python3");
}

TEST_CASE("details are bounded and bad UTF-8 does not throw", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  auto log = AuditLog::open(*db, tdb.dir());
  REQUIRE(log);
  REQUIRE(log->record({"alice", "start", "kernel", "k", {{"blob", std::string(10000, 'x')}}, true}));
  REQUIRE(log->record({"alice", "start", "kernel", "bad\xff\xfe", {{"name", "\xc3"}}, true}));
  REQUIRE(log->record({"alice", "start", "kernel", "k", json("not an object"), true}));
  auto lines = json_lines(log->file_path());
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["detail"]["truncated"] == true);
  CHECK(lines[0]["detail"]["bytes"].get<size_t>() > kMaxAuditDetailBytes);
  CHECK(read_file(log->file_path()).size() < 2 * kMaxAuditDetailBytes);
  CHECK(lines[2]["detail"] == json{{"value", "not an object"}});
  // The row holds what the line shows: the bad bytes replaced, on either backend.
  REQUIRE(log->record({"alice", "start", "kernel", std::string("nul\0id", 6), json::object(), true}));
  auto rows = log->recent(4);
  REQUIRE(rows);
  REQUIRE(rows->size() == 4);
  CHECK(rows->at(0).event.object_id == "nul\xEF\xBF\xBDid");
  CHECK(rows->at(2).event.object_id.rfind("bad\xEF\xBF\xBD", 0) == 0);
  CHECK(json_lines(log->file_path()).at(1)["object_id"] == rows->at(2).event.object_id);
}

TEST_CASE("the audit table is append-only", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  auto log = AuditLog::open(*db, tdb.dir());
  REQUIRE(log);
  REQUIRE(log->record({"alice", "delete", "workspace", "w", json::object(), true}));
  auto upd = db->exec("UPDATE audit_log SET \"user\" = 'mallory'");
  REQUIRE_FALSE(upd);
  CHECK_THAT(upd.error().message, Catch::Contains("append-only"));
  auto del = db->exec("DELETE FROM audit_log");
  REQUIRE_FALSE(del);
  CHECK_THAT(del.error().message, Catch::Contains("append-only"));
  if (db->kind() == cellgate::state::BackendKind::kPostgres) {
    auto truncate = db->exec("TRUNCATE audit_log");
    REQUIRE_FALSE(truncate);
    CHECK_THAT(truncate.error().message, Catch::Contains("append-only"));
  }
  CHECK(log->recent(10)->at(0).event.user == "alice");
}

TEST_CASE("an unwritable audit file location is an error", "[state][backends]") {
  TestDatabase tdb;
  auto db = tdb.open();
  REQUIRE(db);
  auto log = AuditLog::open(*db, tdb.dir() + "/missing-dir");
  REQUIRE_FALSE(log);
  CHECK_THAT(log.error().message, Catch::Contains("audit.log"));
}
