// SPDX-License-Identifier: BSD-3-Clause
// database_thread_test: jobs run in order on a connection of their own; the queue's bounds refuse at
// once (the poster never waits on the database); stop ends what is left.
#include "state/database_thread.h"

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <vector>

#include <catch2/catch.hpp>

#include "state/workspace_records.h"
#include "test_database.h"

using cellgate::common::Errc;
using cellgate::common::Status;
using cellgate::state::Database;
using cellgate::state::DatabaseThread;
using cellgate::state::DatabaseThreadOptions;
using cellgate::state::test::TestDatabase;
using namespace std::chrono_literals;

namespace {

DatabaseThread::Connect connect_to(const TestDatabase& tdb) {
  return [&tdb] { return tdb.open(); };
}

// A job that holds the thread until released: what a database that stopped answering does.
struct Gate {
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  DatabaseThread::Work job() {
    return [f = opened](Database&) {
      f.wait();
      return Status(cellgate::common::ok());
    };
  }
};

}  // namespace

TEST_CASE("database thread: jobs run in order, on its own connection, and their rows are seen by others",
          "[database_thread][backends]") {
  TestDatabase tdb;
  auto mine = tdb.open();
  REQUIRE(mine);
  DatabaseThread t(DatabaseThreadOptions{}, connect_to(tdb));
  REQUIRE(t.start());
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> last;
  for (int i = 0; i < 20; ++i) {
    const bool final_job = i == 19;
    REQUIRE(t.post(
        "alice",
        [i](Database& db) {
          return cellgate::state::ensure_workspace(
              db, cellgate::state::WorkspaceRow{"alice", "w" + std::to_string(i), "2026-12-04T00:00:00Z", false});
        },
        [&, i, final_job](Status st) {
          REQUIRE(st);
          std::lock_guard lk(mu);
          order.push_back(i);
          if (final_job) last.set_value();
        }));
  }
  REQUIRE(last.get_future().wait_for(30s) == std::future_status::ready);
  std::vector<int> expected(20);
  for (int i = 0; i < 20; ++i) expected[static_cast<size_t>(i)] = i;
  CHECK(order == expected);
  auto rows = cellgate::state::list_all_workspaces(*mine);
  REQUIRE(rows);
  CHECK(rows->size() == 20);
  t.stop();
}

TEST_CASE("database thread: a full queue, or a tenant's full share, refuses at once while a job hangs",
          "[database_thread]") {
  TestDatabase tdb;
  DatabaseThreadOptions o;
  o.max_jobs = 6;
  o.max_jobs_per_tenant = 3;
  DatabaseThread t(o, connect_to(tdb));
  REQUIRE(t.start());
  Gate gate;
  std::atomic<int> ran{0}, stopped{0};
  auto done = [&](Status st) { st ? ++ran : ++stopped; };
  REQUIRE(t.post("mallory", gate.job(), done));  // running, and holding the thread
  const auto began = std::chrono::steady_clock::now();
  CHECK(t.post("mallory", gate.job(), done));
  CHECK(t.post("mallory", gate.job(), done));
  CHECK_FALSE(t.post("mallory", gate.job(), done));  // mallory's share: 3 held
  CHECK(t.refused() == 1);
  CHECK(t.post("alice", gate.job(), done));  // others still get in
  CHECK(t.post("bob", gate.job(), done));
  CHECK(t.post("bob", gate.job(), done));
  CHECK_FALSE(t.post("carol", gate.job(), done));  // the whole queue: 6 held
  CHECK(t.refused() == 2);
  CHECK(std::chrono::steady_clock::now() - began < 1s);  // never waited on the hung job
  gate.open.set_value();
  t.stop();
  CHECK(ran == 6);
  CHECK(stopped == 0);
  CHECK_FALSE(t.post("alice", gate.job(), done));  // stopped
}

TEST_CASE("database thread: stop ends what is still queued after its grace with kUnavailable", "[database_thread]") {
  TestDatabase tdb;
  DatabaseThread t(DatabaseThreadOptions{}, connect_to(tdb));
  REQUIRE(t.start());
  auto gate = std::make_shared<Gate>();
  std::atomic<int> ran{0};
  std::vector<Errc> failed;
  std::mutex mu;
  auto done = [&](Status st) {
    if (st) {
      ++ran;
      return;
    }
    std::lock_guard lk(mu);
    failed.push_back(st.error().code);
  };
  std::promise<void> started;
  auto first = [&started, f = gate->opened](Database&) {
    started.set_value();
    f.wait();
    return Status(cellgate::common::ok());
  };
  REQUIRE(t.post("a", first, done));
  for (int i = 0; i < 3; ++i) REQUIRE(t.post("a", gate->job(), done));
  started.get_future().wait();
  std::thread opener([gate] {
    std::this_thread::sleep_for(300ms);
    gate->open.set_value();
  });
  t.stop(0ms);  // the running job finishes; the three behind it are past the grace
  opener.join();
  CHECK(ran == 1);
  CHECK(failed == std::vector<Errc>{Errc::kUnavailable, Errc::kUnavailable, Errc::kUnavailable});
}

TEST_CASE("database thread: a connection that cannot be made is start's error", "[database_thread]") {
  DatabaseThread t(DatabaseThreadOptions{},
                   [] { return cellgate::common::Result<Database>(cellgate::common::make_error(Errc::kUnavailable, "no")); });
  auto st = t.start();
  REQUIRE_FALSE(st);
  CHECK(st.error().message == "no");
  CHECK_FALSE(t.post("a", [](Database&) { return Status(cellgate::common::ok()); }, nullptr));
}

TEST_CASE("database thread: a job cancelled while queued never runs, and its place is free at once",
          "[database_thread]") {
  TestDatabase tdb;
  DatabaseThreadOptions o;
  o.max_jobs = 4;
  o.max_jobs_per_tenant = 2;
  DatabaseThread t(o, connect_to(tdb));
  REQUIRE(t.start());
  auto gate = std::make_shared<Gate>();
  std::promise<void> started;
  auto first = [&started, f = gate->opened](Database&) {
    started.set_value();
    f.wait();
    return Status(cellgate::common::ok());
  };
  std::atomic<int> ran{0}, done_calls{0};
  auto counted = [&ran](Database&) {
    ++ran;
    return Status(cellgate::common::ok());
  };
  auto done = [&done_calls](Status) { ++done_calls; };
  auto running = t.post("other", first, done);
  REQUIRE(running);
  started.get_future().wait();  // the thread now hangs in it, as on a database that stopped answering
  auto abandoned = t.post("mallory", counted, done);
  auto second = t.post("mallory", counted, done);
  REQUIRE(abandoned);
  REQUIRE(second);
  CHECK_FALSE(t.post("mallory", counted, done));  // mallory's share (2) is held
  // The waiter of the first gave up: the job goes, and mallory's share has room again.
  CHECK(t.cancel(*abandoned));
  CHECK_FALSE(t.cancel(*abandoned));  // once
  CHECK_FALSE(t.cancel(*running));    // already running: it finishes, and done hears it
  CHECK(t.cancelled() == 1);
  auto third = t.post("mallory", counted, done);
  CHECK(third);
  gate->open.set_value();
  t.stop();
  CHECK(ran == 2);         // the second and the third, never the cancelled one
  CHECK(done_calls == 3);  // the running one, the second and the third
  CHECK_FALSE(t.cancel(*second));  // finished
}
