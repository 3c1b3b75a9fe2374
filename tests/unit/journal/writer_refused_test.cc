// SPDX-License-Identifier: BSD-3-Clause
// writer_refused_test: a row the database refuses (its journal gone, its key taken) is skipped, and
// the rest of its batch is written, on either backend. PostgreSQL aborts a transaction at its first
// failed statement ("current transaction is aborted", SQLSTATE 25P02), where SQLite undoes only the
// statement: a batch that went on past the refusal failed whole there, and was retried forever.
#include <future>
#include <string>

#include <catch2/catch.hpp>

#include "journal/writer.h"
#include "state/database.h"
#include "state/journal_records.h"
#include "workspace/workspace_manager.h"
#include "../state/test_database.h"

using namespace cellgate;
using namespace cellgate::journal;

namespace {

common::Status sync(Writer& w) {
  auto p = std::make_shared<std::promise<common::Status>>();
  auto f = p->get_future();
  Event ev{Event::Type::kSync};
  ev.done = [p](common::Status st) { p->set_value(st); };
  w.post(std::move(ev));
  REQUIRE(f.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  return f.get();
}

void open(Writer& w, const std::string& kernel) {
  Event ev{Event::Type::kOpen};
  ev.journal = state::JournalRow{kernel, "alice", "python3", "default", "2026-12-04T00:00:00Z"};
  w.post(std::move(ev));
}

void post_entry(Writer& w, Event::Type type, const std::string& kernel, int64_t seq) {
  Event ev{type};
  Entry& e = ev.entry;
  e.kernel_id = kernel;
  e.owner = "alice";
  e.seq = seq;
  e.msg_id = kernel + "-" + std::to_string(seq);
  e.origin = Origin{"alice", client::kExecute, ""};
  e.code = "1 + " + std::to_string(seq);
  e.code_bytes = e.code.size();
  e.requested_ns = e.started_ns = 1'700'000'000'000'000'000 + seq;
  if (type == Event::Type::kEnd) {
    e.ended_ns = e.started_ns + 1000;
    e.status = "ok";
  }
  w.post(std::move(ev));
}

std::vector<int64_t> seqs(state::Database& db, const std::string& kernel) {
  auto rows = state::list_journal_entries(db, kernel, 0, 1000);
  REQUIRE(rows);
  std::vector<int64_t> out;
  for (const auto& r : rows.value()) out.push_back(r.seq);
  return out;
}

}  // namespace

TEST_CASE("rows the database refuses are skipped and the rest of their batch is written", "[backends]") {
  state::test::TestDatabase db;
  auto reader = db.open();
  REQUIRE(reader);
  auto workspaces = workspace::WorkspaceManager::open(db.dir() + "/data", {});
  REQUIRE(workspaces);
  WriterOptions options;
  options.retention = RetentionDefaults{0, 0};
  Writer w(options, [&db] { return db.open(); }, *workspaces.value());
  // Posted before the thread starts, so that they are one batch.
  open(w, "ka");
  post_entry(w, Event::Type::kEnd, "ghost", 1);  // no journal: the foreign key refuses it
  post_entry(w, Event::Type::kEnd, "ka", 1);
  post_entry(w, Event::Type::kBegin, "ka", 2);
  post_entry(w, Event::Type::kBegin, "ka", 2);  // the same key twice in one multi-row INSERT
  post_entry(w, Event::Type::kEnd, "ka", 2);
  open(w, "ka");                                // again: the journal is there already
  post_entry(w, Event::Type::kEnd, "ka", 3);
  REQUIRE(w.start());
  CHECK(sync(w));
  CHECK(seqs(reader.value(), "ka") == std::vector<int64_t>{1, 2, 3});
  CHECK(seqs(reader.value(), "ghost").empty());
  // And the writer goes on with the next batch.
  post_entry(w, Event::Type::kEnd, "ka", 4);
  CHECK(sync(w));
  CHECK(seqs(reader.value(), "ka") == std::vector<int64_t>{1, 2, 3, 4});
  w.stop();
}
