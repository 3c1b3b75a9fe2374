// SPDX-License-Identifier: BSD-3-Clause
// journal_records: the execution journal's tables.
#include "state/journal_records.h"

#include <sstream>

#include "state/rows.h"

namespace cellgate::state {

using common::Result;
using common::Status;

namespace {

constexpr const char* kJournalColumns =
    "kernel_id, owner, kernelspec, workspace, created, deleted, baseline, note, baseline_bytes";
constexpr const char* kEntryColumns =
    "kernel_id, seq, owner, kind, msg_id, run_by, client, session, silent, code, started, ended, status, "
    "execution_count, outputs, snapshot_before, snapshot_after, bytes, blobs, detail";

JournalRow read_journal(const Statement& st) {
  JournalRow j{st.column_text(0), st.column_text(1), st.column_text(2), st.column_text(3),
               st.column_text(4), st.column_text(5), st.column_text(6), st.column_text(7)};
  j.baseline_bytes = st.column_int(8);
  return j;
}

JournalEntryRow read_entry(const Statement& st) {
  JournalEntryRow e;
  e.kernel_id = st.column_text(0);
  e.seq = st.column_int(1);
  e.owner = st.column_text(2);
  e.kind = st.column_text(3);
  e.msg_id = st.column_text(4);
  e.run_by = st.column_text(5);
  e.client = st.column_text(6);
  e.session = st.column_text(7);
  e.silent = st.column_int(8) != 0;
  e.code = st.column_text(9);
  e.started = st.column_text(10);
  e.ended = st.column_text(11);
  e.status = st.column_text(12);
  e.execution_count = st.column_opt_int(13);
  e.outputs = st.column_text(14);
  e.snapshot_before = st.column_text(15);
  e.snapshot_after = st.column_text(16);
  e.bytes = st.column_int(17);
  e.blobs = st.column_text(18);
  e.detail = st.column_text(19);
  return e;
}

EntryCost read_cost(const Statement& st) {
  return EntryCost{st.column_text(0), st.column_int(1), st.column_int(2), st.column_text(3)};
}

int64_t read_int(const Statement& st) { return st.column_is_null(0) ? 0 : st.column_int(0); }

}  // namespace

Status insert_journal(Database& db, const JournalRow& j) {
  auto st = db.prepare(std::string("INSERT INTO journals (") + kJournalColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, j.kernel_id).bind(2, j.owner).bind(3, j.kernelspec).bind(4, j.workspace).bind(5, j.created);
  st->bind(6, j.deleted).bind(7, j.baseline).bind(8, j.note).bind(9, j.baseline_bytes);
  return st->run();
}

Result<JournalRow> get_journal(Database& db, const std::string& kernel_id) {
  auto st = db.prepare(std::string("SELECT ") + kJournalColumns + " FROM journals WHERE kernel_id = ?");
  if (!st) return st.error();
  st->bind(1, kernel_id);
  return first<JournalRow>(*st, read_journal, "no journal for kernel " + kernel_id);
}

Result<std::vector<JournalRow>> list_journals(Database& db, const std::optional<std::string>& owner) {
  auto st = db.prepare(std::string("SELECT ") + kJournalColumns + " FROM journals" + (owner ? " WHERE owner = ?" : "") +
                       " ORDER BY created, kernel_id");
  if (!st) return st.error();
  if (owner) st->bind(1, *owner);
  return collect<JournalRow>(*st, read_journal);
}

Status set_journal_deleted(Database& db, const std::string& kernel_id, const std::string& when) {
  auto st = db.prepare("UPDATE journals SET deleted = ? WHERE kernel_id = ?");
  if (!st) return st.error();
  st->bind(1, when).bind(2, kernel_id);
  return change_one(db, *st, "no journal for kernel " + kernel_id);
}

Status set_journal_baseline(Database& db, const std::string& kernel_id, const std::string& snapshot,
                            const std::string& note, int64_t bytes) {
  auto st = db.prepare("UPDATE journals SET baseline = ?, note = ?, baseline_bytes = ? WHERE kernel_id = ?");
  if (!st) return st.error();
  st->bind(1, snapshot).bind(2, note).bind(3, bytes).bind(4, kernel_id);
  return change_one(db, *st, "no journal for kernel " + kernel_id);
}

Status delete_journal(Database& db, const std::string& kernel_id) {
  auto st = db.prepare("DELETE FROM journals WHERE kernel_id = ?");
  if (!st) return st.error();
  st->bind(1, kernel_id);
  return change_one(db, *st, "no journal for kernel " + kernel_id);
}

namespace {

std::string insert_entries_sql(size_t rows) {
  std::string sql = std::string("INSERT INTO journal_entries (") + kEntryColumns + ") VALUES ";
  for (size_t i = 0; i < rows; ++i)
    sql += i ? ", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
             : "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  return sql;
}

constexpr int kEntryParams = 20;

// Binds e as the row-th (0-based) row of an entry INSERT.
// The row's text is bound in place: e outlives the statement's run (the writer's batch holds it).
void bind_entry(Statement& st, int row, const JournalEntryRow& e) {
  const int b = row * kEntryParams;
  st.bind_in_place(b + 1, e.kernel_id).bind(b + 2, e.seq).bind_in_place(b + 3, e.owner);
  st.bind_in_place(b + 4, e.kind).bind_in_place(b + 5, e.msg_id).bind_in_place(b + 6, e.run_by);
  st.bind_in_place(b + 7, e.client).bind_in_place(b + 8, e.session).bind(b + 9, e.silent);
  st.bind_in_place(b + 10, e.code).bind_in_place(b + 11, e.started).bind_in_place(b + 12, e.ended);
  st.bind_in_place(b + 13, e.status).bind(b + 14, e.execution_count).bind_in_place(b + 15, e.outputs);
  st.bind_in_place(b + 16, e.snapshot_before).bind_in_place(b + 17, e.snapshot_after).bind(b + 18, e.bytes);
  st.bind_in_place(b + 19, e.blobs).bind_in_place(b + 20, e.detail);
}

}  // namespace

Result<EntryStatements> EntryStatements::prepare(Database& db) {
  auto insert = db.prepare(insert_entries_sql(1));
  if (!insert) return insert.error();
  auto small = db.prepare(insert_entries_sql(kSmallChunk));
  if (!small) return small.error();
  auto chunk = db.prepare(insert_entries_sql(kChunk));
  if (!chunk) return chunk.error();
  auto finish = db.prepare(
      "UPDATE journal_entries SET code = ?, started = ?, ended = ?, status = ?, execution_count = ?, outputs = ?, "
      "snapshot_before = ?, snapshot_after = ?, bytes = ?, blobs = ?, detail = ? WHERE kernel_id = ? AND seq = ?");
  if (!finish) return finish.error();
  return EntryStatements(std::move(insert.value()), std::move(small.value()), std::move(chunk.value()),
                         std::move(finish.value()));
}

Status EntryStatements::insert(const JournalEntryRow& e) {
  insert_.reset();
  bind_entry(insert_, 0, e);
  return insert_.run();
}

Status EntryStatements::insert(std::span<const JournalEntryRow* const> rows, size_t& written) {
  written = 0;
  while (!rows.empty()) {
    const size_t n = rows.size() >= kChunk ? kChunk : rows.size() >= kSmallChunk ? kSmallChunk : 1;
    Statement& st = n == kChunk ? insert_chunk_ : n == kSmallChunk ? insert_small_ : insert_;
    st.reset();
    for (size_t i = 0; i < n; ++i) bind_entry(st, static_cast<int>(i), *rows[i]);
    if (auto s = st.run(); !s) return s;
    written += n;
    rows = rows.subspan(n);
  }
  return common::ok();
}

Status EntryStatements::finish(const JournalEntryRow& e) {
  Statement& st = finish_;
  st.reset();
  st.bind(1, e.code).bind(2, e.started).bind(3, e.ended).bind(4, e.status).bind(5, e.execution_count);
  st.bind(6, e.outputs).bind(7, e.snapshot_before).bind(8, e.snapshot_after).bind(9, e.bytes).bind(10, e.blobs);
  st.bind(11, e.detail).bind(12, e.kernel_id).bind(13, e.seq);
  return st.run();
}

Result<std::vector<JournalEntryRow>> list_journal_entries(Database& db, const std::string& kernel_id, int64_t since,
                                                          int64_t limit) {
  auto st = db.prepare(std::string("SELECT ") + kEntryColumns +
                       " FROM journal_entries WHERE kernel_id = ? AND seq > ? ORDER BY seq LIMIT ?");
  if (!st) return st.error();
  st->bind(1, kernel_id).bind(2, since).bind(3, limit);
  return collect<JournalEntryRow>(*st, read_entry);
}

Result<int64_t> journal_entry_count(Database& db, const std::string& kernel_id) {
  auto st = db.prepare("SELECT count(*) FROM journal_entries WHERE kernel_id = ?");
  if (!st) return st.error();
  st->bind(1, kernel_id);
  return first<int64_t>(*st, read_int, "count returned no row");
}

Result<int64_t> max_journal_seq(Database& db, const std::string& kernel_id) {
  auto st = db.prepare("SELECT max(seq) FROM journal_entries WHERE kernel_id = ?");
  if (!st) return st.error();
  st->bind(1, kernel_id);
  return first<int64_t>(*st, read_int, "max returned no row");
}

Result<std::string> last_journal_snapshot(Database& db, const std::string& kernel_id) {
  auto st = db.prepare(
      "SELECT snapshot_after FROM journal_entries WHERE kernel_id = ? AND snapshot_after <> '' ORDER BY seq DESC LIMIT 1");
  if (!st) return st.error();
  st->bind(1, kernel_id);
  auto row = first<std::string>(*st, [](const Statement& s) { return s.column_text(0); }, "");
  if (!row && row.error().code == common::Errc::kNotFound) return std::string();
  return row;
}

Result<int64_t> end_running_entries(Database& db, const std::string& kernel_id, const std::string& status,
                                    const std::string& ended, std::optional<int64_t> below_seq) {
  auto st = db.prepare(std::string("UPDATE journal_entries SET status = ?, ended = ? WHERE kernel_id = ? AND "
                                   "status = 'running'") + (below_seq ? " AND seq < ?" : ""));
  if (!st) return st.error();
  st->bind(1, status).bind(2, ended).bind(3, kernel_id);
  if (below_seq) st->bind(4, *below_seq);
  if (auto s = st->run(); !s) return s.error();
  return db.changes();
}

Result<int64_t> journal_bytes_of(Database& db, const std::string& owner) {
  auto st = db.prepare(
      "SELECT CAST((SELECT coalesce(sum(bytes), 0) FROM journal_entries WHERE owner = ?) + "
      "(SELECT coalesce(sum(baseline_bytes), 0) FROM journals WHERE owner = ?) AS BIGINT)");
  if (!st) return st.error();
  st->bind(1, owner).bind(2, owner);
  return first<int64_t>(*st, read_int, "sum returned no row");
}

Result<std::vector<EntryCost>> oldest_journal_entries(Database& db, const std::string& owner, int64_t limit,
                                                      const std::optional<std::string>& before,
                                                      bool baselines) {
  // A baseline (seq 0) is as old as its journal, older than any of its entries.
  auto st = db.prepare(
      std::string("SELECT kernel_id, seq, bytes, blobs, started FROM journal_entries WHERE owner = ?") +
      (before ? " AND started < ?" : "") +
      (baselines ? " UNION ALL SELECT kernel_id, 0 AS seq, baseline_bytes AS bytes, '' AS blobs, created AS started "
                   "FROM journals WHERE owner = ? AND baseline_bytes > 0"
                 : "") +
      " ORDER BY started, kernel_id, seq LIMIT ?");
  if (!st) return st.error();
  int i = 1;
  st->bind(i++, owner);
  if (before) st->bind(i++, *before);
  if (baselines) st->bind(i++, owner);
  st->bind(i, limit);
  return collect<EntryCost>(*st, read_cost);
}

Status delete_journal_entry(Database& db, const std::string& kernel_id, int64_t seq) {
  auto st = db.prepare("DELETE FROM journal_entries WHERE kernel_id = ? AND seq = ?");
  if (!st) return st.error();
  st->bind(1, kernel_id).bind(2, seq);
  return change_one(db, *st, "no such journal entry");
}

Result<std::vector<std::string>> journal_owners(Database& db) {
  auto st = db.prepare("SELECT DISTINCT owner FROM journals ORDER BY owner");
  if (!st) return st.error();
  return collect<std::string>(*st, [](const Statement& s) { return s.column_text(0); });
}

Result<std::vector<std::string>> journal_blobs(Database& db, const std::string& kernel_id) {
  auto st = db.prepare("SELECT blobs FROM journal_entries WHERE kernel_id = ? AND blobs <> ''");
  if (!st) return st.error();
  st->bind(1, kernel_id);
  auto lists = collect<std::string>(*st, [](const Statement& s) { return s.column_text(0); });
  if (!lists) return lists.error();
  std::vector<std::string> out;
  for (const auto& list : lists.value()) {
    std::istringstream in(list);
    for (std::string hash; in >> hash;) out.push_back(hash);
  }
  return out;
}

Result<std::vector<JournalRow>> empty_deleted_journals(Database& db) {
  auto st = db.prepare(std::string("SELECT ") + kJournalColumns +
                       " FROM journals j WHERE deleted <> '' AND NOT EXISTS "
                       "(SELECT 1 FROM journal_entries e WHERE e.kernel_id = j.kernel_id) ORDER BY created");
  if (!st) return st.error();
  return collect<JournalRow>(*st, read_journal);
}

}  // namespace cellgate::state
