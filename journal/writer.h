// SPDX-License-Identifier: BSD-3-Clause
// writer: the journal's own thread and database connection. Entries arrive on a bounded queue and are
// written in batches, one transaction per batch, so that neither an execute nor the io thread waits on
// the database; large outputs go to the object store first, held by a pin per journal.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "journal/entry.h"
#include "journal/retention.h"
#include "journal/write_batch.h"
#include "state/database.h"
#include "state/journal_records.h"

namespace cellgate::workspace {
class WorkspaceManager;
}

namespace cellgate::journal {

struct WriterOptions {
  std::chrono::milliseconds interval{100};  // what a batch gathers; a crash loses at most this much
  // What the writer holds, from post() until committed: at most queue_bytes in all, and at most
  // owner_queue_bytes for the entries of one owner's kernels (0: queue_bytes / 8), so that one owner
  // flooding the writer while the database is slow cannot cut another's entries. Past either bound an
  // entry is cut to its facts and the start of its code, and past it again dropped: counted, and named
  // on the kernel's next entry kept (unrecorded_before). post() never blocks.
  uint64_t queue_bytes = 64ull << 20;
  uint64_t owner_queue_bytes = 0;
  uint64_t inline_output_bytes = 4 << 10;   // larger outputs become store objects
  RetentionDefaults retention{};
};

class Writer {
 public:
  using Connect = std::function<common::Result<state::Database>()>;
  Writer(WriterOptions options, Connect connect, workspace::WorkspaceManager& workspaces);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Connects (a config error when it cannot) and starts the thread.
  common::Status start();
  // Writes what is queued (retrying a database that is away for up to `grace`), then joins.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
  // Any thread. Never waits for the database, only for the queue's mutex.
  void post(Event event);
  // Entries cut, and entries dropped, since start because the queue (or their owner's share) was full.
  uint64_t cut() const;
  uint64_t dropped() const;

 private:
  void run();
  // kFast: multi-row INSERTs, no savepoints. kGuarded: each write under a savepoint, for a batch in
  // which PostgreSQL refused a row (want_guarded set), since that aborted the whole transaction.
  enum class Mode { kFast, kGuarded };
  common::Status apply(std::vector<WriteOp>& ops, Mode mode, bool& want_guarded);
  void after_commit(std::vector<WriteOp>& ops);
  // ops leave the writer (committed, or lost at shutdown): their bytes no longer count.
  void release(const std::vector<WriteOp>& ops);

  WriterOptions options_;
  Connect connect_;
  workspace::WorkspaceManager& workspaces_;
  std::optional<state::Database> db_;
  // Compiled once, reused by every batch (after db_: finalized before the connection closes). The
  // backends keep them valid across reconnects (PostgreSQL's are SQL text and parameters).
  std::optional<state::EntryStatements> stmts_;
  std::unique_ptr<Retention> retention_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Event> queue_;
  uint64_t queued_bytes_ = 0;  // of queue_ (a batch is written early past a quarter of queue_bytes)
  uint64_t held_bytes_ = 0;    // posted and not committed yet: queued, being written, or retried
  std::unordered_map<std::string, uint64_t> held_by_owner_;  // the same, per owner of the entries' kernels
  std::unordered_map<std::string, uint64_t> unrecorded_;     // kernel id → entries dropped since its last kept
  bool sync_wanted_ = false;
  bool writer_idle_ = false;  // the writer waits for a first event (post() wakes it)
  bool stopping_ = false;
  uint64_t cut_ = 0;
  uint64_t dropped_ = 0;
  std::chrono::steady_clock::time_point stop_deadline_{};
  std::thread thread_;

  // Writer thread only.
  std::unordered_map<std::string, int64_t> running_bytes_;  // "kernel/seq" inserted as running → its bytes
};

}  // namespace cellgate::journal
