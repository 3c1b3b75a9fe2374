// SPDX-License-Identifier: BSD-3-Clause
// writer_test: the journal's writer on a real SQLite database that another connection holds locked (the
// database away, as when a disk stalls): what it holds meanwhile is bounded per owner of the kernels,
// so that one owner flooding it cannot cut another's entries; what does not fit is cut, then dropped,
// and a drop is counted and named on the next entry the writer keeps for that kernel.
#include <future>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "journal/render.h"
#include "journal/writer.h"
#include "state/database.h"
#include "state/journal_records.h"
#include "workspace/workspace_manager.h"
#include "../state/state_test_util.h"

using namespace cellgate;
using namespace cellgate::journal;
using nlohmann::json;

namespace {

constexpr int kFlood = 400;  // alice's executions of 64 KiB each: six times the whole queue

// Posts a sync and waits for the writer to say it is done (committed, or could not be).
void sync(Writer& w) {
  auto p = std::make_shared<std::promise<void>>();
  auto f = p->get_future();
  Event ev{Event::Type::kSync};
  ev.done = [p](common::Status) { p->set_value(); };
  w.post(std::move(ev));
  REQUIRE(f.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
}

void open(Writer& w, const std::string& kernel, const std::string& owner) {
  Event ev{Event::Type::kOpen};
  ev.journal = state::JournalRow{kernel, owner, "python3", "default", "2026-12-03T00:00:00Z"};
  w.post(std::move(ev));
}

// An ended execution whose stdout holds `bytes` bytes.
void end(Writer& w, const std::string& kernel, const std::string& owner, int64_t seq, size_t bytes) {
  Event ev{Event::Type::kEnd};
  Entry& e = ev.entry;
  e.kernel_id = kernel;
  e.owner = owner;
  e.seq = seq;
  e.msg_id = kernel + "-" + std::to_string(seq);
  e.origin = Origin{owner, client::kExecute, ""};
  e.code = "print('x' * " + std::to_string(bytes) + ")";
  e.code_bytes = e.code.size();
  e.requested_ns = e.started_ns = 1'700'000'000'000'000'000 + seq;
  e.ended_ns = e.started_ns + 1000;
  e.status = "ok";
  e.execution_count = seq;
  e.outputs.push_back(Output{"stream", json{{"name", "stdout"}, {"text", std::string(bytes, 'x')}}.dump()});
  e.output_bytes = e.outputs.back().content.size();
  w.post(std::move(ev));
}

struct Flooded {
  state::test::TempDir tmp;
  std::string data = tmp.path() + "/data";
  state::Database locker = state::Database::open(data).value();  // the schema, and who holds the lock
  std::unique_ptr<workspace::WorkspaceManager> workspaces = workspace::WorkspaceManager::open(data, {}).value();
  WriterOptions options;

  Flooded() {
    options.interval = std::chrono::milliseconds(10);
    options.queue_bytes = 4 << 20;
    options.inline_output_bytes = 1 << 20;  // outputs stay in the rows (the store is not what this is about)
    options.retention = RetentionDefaults{0, 0};
  }

  // While the database is away (a write lock held by another connection: the writer's batches fail
  // after SQLite's busy timeout and are retried), alice's kernel ends kFlood executions of 64 KiB and
  // bob's four of 16 KiB; then the database is back, and alice's kernel ends one more.
  void run(Writer& w) {
    REQUIRE(w.start());
    open(w, "ka", "alice");
    open(w, "kb", "bob");
    sync(w);
    REQUIRE(locker.exec("BEGIN IMMEDIATE"));
    REQUIRE(locker.exec("INSERT INTO journals (kernel_id, owner, kernelspec, workspace, created) "
                        "VALUES ('lock', 'x', 'x', 'x', 'x')"));
    for (int i = 1; i <= kFlood; ++i) end(w, "ka", "alice", i, 64 << 10);
    for (int i = 1; i <= 4; ++i) end(w, "kb", "bob", i, 16 << 10);
    REQUIRE(locker.exec("ROLLBACK"));
    sync(w);
    end(w, "ka", "alice", kFlood + 1, 10);
    sync(w);
    w.stop();
  }

  std::vector<state::JournalEntryRow> entries(const std::string& kernel) {
    auto rows = state::list_journal_entries(locker, kernel, 0, 1000);
    REQUIRE(rows);
    return rows.value();
  }
};

}  // namespace

TEST_CASE("one owner flooding the journal's writer while the database is away cuts none of another's entries",
          "[journal]") {
  Flooded f;
  Writer w(f.options, [data = f.data] { return state::Database::open(data); }, *f.workspaces);
  f.run(w);
  auto bob = f.entries("kb");
  REQUIRE(bob.size() == 4);
  for (const auto& e : bob) {
    CHECK(e.detail == "{}");  // not cut
    CHECK(e.outputs.size() > (16u << 10));
  }
}

TEST_CASE("past its owner's share an entry is cut, then dropped and counted on the kernel's next entry",
          "[journal]") {
  Flooded f;
  Writer w(f.options, [data = f.data] { return state::Database::open(data); }, *f.workspaces);
  f.run(w);
  auto alice = f.entries("ka");
  REQUIRE(!alice.empty());
  // The flood's first executions whole, then cut to their code, then dropped: never more than alice's
  // share (by default an eighth of the queue) held at once.
  CHECK(alice.front().seq == 1);
  CHECK(alice.front().detail == "{}");
  int64_t whole = 0, cut = 0;
  for (const auto& e : alice) {
    if (e.seq > kFlood) continue;
    if (e.detail == "{}") ++whole;
    else if (json::parse(e.detail).value("reason", "").find("cut: the owner's share") == 0) ++cut;
  }
  CHECK(whole > 0);
  CHECK(whole * (64 << 10) <= static_cast<int64_t>(f.options.queue_bytes / 8));
  CHECK(cut > 0);
  const auto& last = alice.back();
  REQUIRE(last.seq == kFlood + 1);
  const int64_t dropped = json::parse(last.detail).value("unrecorded_before", int64_t{0});
  CHECK(dropped > 0);
  // Every execution of the flood is accounted for: whole, cut, or counted as dropped.
  CHECK(whole + cut + dropped == kFlood);
  CHECK(w.cut() == static_cast<uint64_t>(cut));
  CHECK(w.dropped() == static_cast<uint64_t>(dropped));

  // The notebook says so where it happened: a markdown cell before the entry that names the gap.
  auto journal = state::get_journal(f.locker, "ka");
  REQUIRE(journal);
  BlobReader read = [](const std::string&) -> common::Result<std::string> { return std::string(); };
  auto nb = journal_notebook(journal.value(), NotebookKernel{"Python 3", "python"}, {last}, read, 1 << 20);
  const auto& cells = nb["cells"];
  REQUIRE(cells.size() >= 2);
  const auto& gap = cells[cells.size() - 2];
  CHECK(gap["cell_type"] == "markdown");
  CHECK(gap["metadata"]["cellgate"]["unrecorded"] == dropped);
  CHECK(gap["source"].get<std::string>().find(std::to_string(dropped) + " entries before this one were not "
                                                                         "recorded") != std::string::npos);
  CHECK(cells.back()["cell_type"] == "code");
}

// The writer idles (and post() wakes it) only after an interval that brought nothing; while entries keep
// coming it wakes on its own, once per batch, and post() does not wake it. Either way an entry is
// committed within its interval without anyone asking (no sync): what a gateway kill -9 would keep.
TEST_CASE("an entry is committed without a sync whether the writer was idle or busy", "[journal]") {
  Flooded f;
  f.options.interval = std::chrono::milliseconds(50);
  Writer w(f.options, [data = f.data] { return state::Database::open(data); }, *f.workspaces);
  REQUIRE(w.start());
  open(w, "ka", "alice");
  sync(w);
  // Polls another connection for the kernel's entry seq (generous: a slow machine, not a speed test).
  auto committed = [&](int64_t seq) {
    for (int i = 0; i < 3000; ++i) {
      auto rows = state::list_journal_entries(f.locker, "ka", seq - 1, 1);
      REQUIRE(rows);
      if (!rows->empty() && rows->front().seq == seq) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // an empty interval: the writer idles
  end(w, "ka", "alice", 1, 10);  // wakes it
  CHECK(committed(1));
  end(w, "ka", "alice", 2, 10);  // the writer waits out the interval after its batch: no wake-up
  CHECK(committed(2));
  for (int64_t seq = 3; seq <= 20; ++seq) {  // a stream, then nothing
    end(w, "ka", "alice", seq, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(7));
  }
  CHECK(committed(20));
  w.stop();
}
