// SPDX-License-Identifier: BSD-3-Clause
// journal_records: the execution journal's tables: one journal per kernel (journals) and its entries
// (journal_entries: executions, restarts), with what retention needs to find the oldest bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

struct JournalRow {
  std::string kernel_id;
  std::string owner;       // who the kernel belongs to: who sees the journal, and who pays for it
  std::string kernelspec;
  std::string workspace;
  std::string created;     // iso8601
  std::string deleted{};   // iso8601 when the kernel was deleted; "" while it lives
  std::string baseline{};  // the workspace snapshot taken before the first entry; "" = none (yet)
  std::string note{};      // why there is no baseline, when there is none
  int64_t baseline_bytes = 0;  // what the baseline snapshot holds, charged to the owner with the entries
};

struct JournalEntryRow {
  std::string kernel_id;
  int64_t seq = 0;            // 1, 2, ... per journal, in the order the gateway saw them
  std::string owner;
  std::string kind;           // execute | restart | died | gateway_restart
  std::string msg_id{};       // the execute_request's, as the gateway read it
  std::string run_by{};       // the authenticated user who sent it ("" for the gateway's own)
  std::string client{};       // websocket | execute | tools | mcp | notebook-http | cellgate-run | seed | gateway
  std::string session{};      // the WebSocket's session_id
  bool silent = false;
  std::string code{};
  std::string started{};      // iso8601
  std::string ended{};        // "" while running
  std::string status{};       // ok | error | aborted | running | interrupted | dead | ...
  std::optional<int64_t> execution_count{};
  std::string outputs = "[]";  // JSON array (journal/entry.h)
  std::string snapshot_before{}, snapshot_after{};
  int64_t bytes = 0;          // what the entry costs its owner (row text and blobs)
  std::string blobs{};        // space-separated object hashes its outputs refer to
  std::string detail = "{}";  // JSON object
};

// Errors as Result: kConflict for a duplicate or a journal that does not exist (foreign key), kNotFound
// when a key names no row.
common::Status insert_journal(Database& db, const JournalRow& j);
common::Result<JournalRow> get_journal(Database& db, const std::string& kernel_id);
// Ordered by creation; owner nullopt = everyone's.
common::Result<std::vector<JournalRow>> list_journals(Database& db, const std::optional<std::string>& owner);
common::Status set_journal_deleted(Database& db, const std::string& kernel_id, const std::string& when);
common::Status set_journal_baseline(Database& db, const std::string& kernel_id, const std::string& snapshot,
                                    const std::string& note, int64_t bytes);
// The journal and, by cascade, its entries.
common::Status delete_journal(Database& db, const std::string& kernel_id);

// One transaction's worth of entry writes with statements compiled once (the journal's writer).
class EntryStatements {
 public:
  static common::Result<EntryStatements> prepare(Database& db);
  common::Status insert(const JournalEntryRow& e);
  // Several rows in order, in as few statements as the chunk sizes allow (one INSERT of kChunk rows:
  // the per-statement work is paid once). On an error, the first `written` rows are in and the
  // failing statement's rows are not (a statement is all or none); the caller may write the rest one
  // by one to find the row at fault.
  common::Status insert(std::span<const JournalEntryRow* const> rows, size_t& written);
  // The end of an entry inserted while it ran: every field but the key, kind and who sent it.
  common::Status finish(const JournalEntryRow& e);

  static constexpr size_t kChunk = 16, kSmallChunk = 4;

 private:
  EntryStatements(Statement insert, Statement insert_small, Statement insert_chunk, Statement finish)
      : insert_(std::move(insert)), insert_small_(std::move(insert_small)), insert_chunk_(std::move(insert_chunk)),
        finish_(std::move(finish)) {}
  Statement insert_, insert_small_, insert_chunk_, finish_;
};

// Entries with seq > since, oldest first, at most limit.
common::Result<std::vector<JournalEntryRow>> list_journal_entries(Database& db, const std::string& kernel_id,
                                                                  int64_t since, int64_t limit);
common::Result<int64_t> journal_entry_count(Database& db, const std::string& kernel_id);
// 0 for a journal without entries.
common::Result<int64_t> max_journal_seq(Database& db, const std::string& kernel_id);
// The newest entry's snapshot_after that is not "" ("" when none has one).
common::Result<std::string> last_journal_snapshot(Database& db, const std::string& kernel_id);
// Entries still marked running become status, ended now (a gateway that crashed could not end them);
// with below_seq, only those before it.
common::Result<int64_t> end_running_entries(Database& db, const std::string& kernel_id, const std::string& status,
                                            const std::string& ended, std::optional<int64_t> below_seq = {});

// What retention looks at.
struct EntryCost {
  std::string kernel_id;
  int64_t seq = 0;  // 0: the journal's baseline snapshot
  int64_t bytes = 0;
  std::string blobs;
};
// The owner's entries and baseline snapshots.
common::Result<int64_t> journal_bytes_of(Database& db, const std::string& owner);
// The owner's oldest entries first (by start), at most limit; with before, only those started earlier;
// with baselines, the baseline snapshots too (seq 0, as old as their journal).
common::Result<std::vector<EntryCost>> oldest_journal_entries(Database& db, const std::string& owner, int64_t limit,
                                                              const std::optional<std::string>& before = {},
                                                              bool baselines = false);
common::Status delete_journal_entry(Database& db, const std::string& kernel_id, int64_t seq);
// Every owner with a journal.
common::Result<std::vector<std::string>> journal_owners(Database& db);
// Hashes the remaining entries of one journal refer to.
common::Result<std::vector<std::string>> journal_blobs(Database& db, const std::string& kernel_id);
// Journals of deleted kernels with no entry left (retention took them all).
common::Result<std::vector<JournalRow>> empty_deleted_journals(Database& db);

}  // namespace cellgate::state
