// SPDX-License-Identifier: BSD-3-Clause
// writer: the journal's own thread and database connection, writing in batches.
#include "journal/writer.h"

#include "common/log.h"
#include "workspace/workspace_manager.h"

namespace cellgate::journal {

using common::Errc;

namespace {

constexpr size_t kCutCode = 4 << 10;  // code kept of an entry cut because the queue was full
constexpr auto kMaxBackoff = std::chrono::seconds(5);

void cut_utf8(std::string& s, size_t n) {
  if (s.size() <= n) return;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
}

}  // namespace

Writer::Writer(WriterOptions options, Connect connect, workspace::WorkspaceManager& workspaces)
    : options_(options), connect_(std::move(connect)), workspaces_(workspaces) {}

Writer::~Writer() { stop(); }

common::Status Writer::start() {
  auto db = connect_();
  if (!db) return db.error();
  db_.emplace(std::move(db.value()));
  retention_ = std::make_unique<Retention>(*db_, workspaces_, options_.retention);
  thread_ = std::thread([this] { run(); });
  return common::ok();
}

void Writer::stop(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
    stop_deadline_ = std::chrono::steady_clock::now() + grace;
  }
  cv_.notify_one();
  thread_.join();
}

uint64_t Writer::cut() const {
  std::lock_guard lk(mu_);
  return cut_;
}

uint64_t Writer::dropped() const {
  std::lock_guard lk(mu_);
  return dropped_;
}

void Writer::post(Event event) {
  const bool is_entry = event.type == Event::Type::kBegin || event.type == Event::Type::kEnd;
  const uint64_t share = options_.owner_queue_bytes ? options_.owner_queue_bytes : options_.queue_bytes / 8;
  uint64_t bytes = kEventOverhead + event.entry.held_bytes();
  bool wake;
  {
    std::lock_guard lk(mu_);
    // Why an entry of bytes does not fit (nullptr when it does). Other events are small and bounded by
    // the kernels' lifecycle: they always fit.
    auto full = [&](uint64_t b) -> const char* {
      if (!is_entry) return nullptr;
      if (held_bytes_ + b > options_.queue_bytes) return "the journal's writer was behind (the database was slow or away)";
      auto it = held_by_owner_.find(event.entry.owner);
      if ((it == held_by_owner_.end() ? 0 : it->second) + b > share)
        return "the owner's share of the journal's writer queue was full (the database was slow or away)";
      return nullptr;
    };
    if (const char* why = full(bytes)) {
      // Never the io thread waiting. A begin is dropped (its end inserts the entry); an end keeps its key
      // facts and the start of its code, and when even that does not fit, it is dropped and counted.
      if (event.type == Event::Type::kBegin) return;
      Entry& e = event.entry;
      e.dropped_outputs += e.outputs.size();
      e.dropped_bytes += e.output_bytes;
      e.outputs.clear();
      e.output_bytes = 0;
      cut_utf8(e.code, kCutCode);
      e.reason = std::string("cut: ") + why;
      bytes = kEventOverhead + e.held_bytes();
      if (full(bytes)) {
        ++unrecorded_[e.kernel_id];
        ++dropped_;
        return;
      }
      ++cut_;
    }
    if (event.type == Event::Type::kEnd)
      if (auto it = unrecorded_.find(event.entry.kernel_id); it != unrecorded_.end()) {
        event.entry.unrecorded_before = it->second;
        unrecorded_.erase(it);
      }
    // A kernel gone: what it dropped last is seen as the gap in its seqs.
    if (event.type == Event::Type::kDeleted) unrecorded_.erase(event.journal.kernel_id);
    if (event.type == Event::Type::kSync || event.type == Event::Type::kDrop) sync_wanted_ = true;
    event.charged = bytes;
    held_bytes_ += bytes;
    if (is_entry) held_by_owner_[event.entry.owner] += bytes;
    queue_.push_back(std::move(event));
    queued_bytes_ += bytes;
    // The writer sleeps until its next batch is due and is woken only when it idles with nothing
    // queued, or when something cannot wait: a sync, a queue past a quarter of its bound. Under a
    // steady stream of entries that is one wake-up per batch, not one per entry.
    const uint64_t early = options_.queue_bytes / 4;
    wake = (writer_idle_ && queue_.size() == 1) || sync_wanted_ ||
           (queued_bytes_ > early && queued_bytes_ - bytes <= early);
  }
  if (wake) cv_.notify_one();
}

void Writer::release(const std::vector<WriteOp>& ops) {
  std::lock_guard lk(mu_);
  for (const auto& op : ops) {
    held_bytes_ -= std::min(held_bytes_, op.charged);
    if (op.charged_to.empty()) continue;
    auto it = held_by_owner_.find(op.charged_to);
    if (it == held_by_owner_.end()) continue;
    it->second -= std::min(it->second, op.charged);
    if (it->second == 0) held_by_owner_.erase(it);
  }
}

common::Status Writer::apply(std::vector<WriteOp>& ops, Mode mode, bool& want_guarded) {
  auto tx = state::Transaction::begin(*db_);
  if (!tx) return tx.error();
  if (!stmts_) {
    auto prepared = state::EntryStatements::prepare(*db_);
    if (!prepared) return prepared.error();
    stmts_.emplace(std::move(prepared.value()));
  }
  state::EntryStatements* stmts = &*stmts_;
  const bool guarded = mode == Mode::kGuarded;
  // SQLite undoes a refused statement alone; PostgreSQL aborts the whole transaction at it (every later
  // statement fails with SQLSTATE 25P02), so there a refusal sends the batch back to be written guarded.
  const bool refusal_aborts = db_->kind() == state::BackendKind::kPostgres;
  std::unordered_map<std::string, int64_t> running;  // committed into running_bytes_ after commit
  // Whether an entry was inserted as running (the key is built only when any was: rarely).
  auto was_running = [&](const state::JournalEntryRow& row) {
    if (running.empty() && running_bytes_.empty()) return false;
    const std::string key = entry_key(row.kernel_id, row.seq);
    return running.count(key) > 0 || running_bytes_.count(key) > 0;
  };
  // A row the database refuses (its journal gone, dropped by its owner; its key taken; text the engine
  // cannot store) is not worth the batch. Anything else (the database away) fails it, to be retried.
  auto refused = [](const common::Status& st) {
    const Errc code = st.error().code;
    return code == Errc::kConflict || code == Errc::kNotFound || code == Errc::kBadRequest;
  };
  // Guarded, one statement (or an end's two) under a savepoint, so that a refusal undoes it alone.
  auto guard = [&](auto&& write) -> common::Status {
    if (!guarded) return write();
    if (auto st = db_->exec("SAVEPOINT journal_op"); !st) return st;
    common::Status st = write();
    if (!st && refused(st))
      if (auto back = db_->exec("ROLLBACK TO SAVEPOINT journal_op"); !back) return back;
    if (auto done = db_->exec("RELEASE SAVEPOINT journal_op"); !done) return done;
    return st;
  };
  auto outcome = [&](const WriteOp& op, const common::Status& st) {
    if (st) return true;
    if (!refused(st)) return false;
    if (refusal_aborts && !guarded) {
      want_guarded = true;
      return false;
    }
    // A journal opened again (a kernel resumed after a restart) is expected; anything else is said.
    if (op.type == Event::Type::kOpen && st.error().code == Errc::kConflict) return true;
    const std::string& kid = op.journal.kernel_id.empty() ? op.row.kernel_id : op.journal.kernel_id;
    common::log_warn("kernel={} msg=\"journal write skipped\" error=\"{}\"", kid, st.error().message);
    return true;
  };
  // An entry's first row (a begin, or the end of an entry never written as running), gathered and
  // written in multi-row INSERTs (guarded: one by one); any other write first writes what is gathered,
  // so the rows go in the order posted.
  std::vector<const WriteOp*> group;
  std::vector<const state::JournalEntryRow*> rows;
  bool group_has_begin = false;
  auto flush = [&]() -> common::Status {
    size_t written = 0;
    common::Status st = common::ok();
    if (!guarded) {
      rows.clear();
      for (const WriteOp* op : group) rows.push_back(&op->row);
      st = stmts->insert(rows, written);
      if (!st && refusal_aborts) {
        want_guarded = refused(st);
        return st;
      }
    }
    for (size_t i = 0; i < group.size(); ++i) {
      const WriteOp& op = *group[i];
      common::Status one = common::ok();
      // Past the statement that failed: one by one, so that only the row at fault is skipped.
      if (guarded || (i >= written && !st)) one = guard([&] { return stmts->insert(op.row); });
      if (!outcome(op, one)) return one;
      if (one && op.type == Event::Type::kBegin) running[entry_key(op.row.kernel_id, op.row.seq)] = op.row.bytes;
    }
    group.clear();
    group_has_begin = false;
    return common::ok();
  };
  for (auto& op : ops) {
    if (op.type == Event::Type::kBegin) {
      group.push_back(&op);
      group_has_begin = true;
      continue;
    }
    if (op.type == Event::Type::kEnd) {
      // Its begin may be in the group: written first, so that this end finds it running.
      if (group_has_begin)
        if (auto st = flush(); !st) return st;
      if (!op.unrecorded_before && !was_running(op.row)) {
        group.push_back(&op);
        continue;
      }
    }
    if (!group.empty())
      if (auto st = flush(); !st) return st;
    const std::string& kid = op.journal.kernel_id;
    common::Status st = guard([&]() -> common::Status {
      switch (op.type) {
        case Event::Type::kOpen:
          return state::insert_journal(*db_, op.journal);
        case Event::Type::kEnd: {
          if (auto w = was_running(op.row) ? stmts->finish(op.row) : stmts->insert(op.row); !w) return w;
          // Entries of this kernel the writer dropped may have been written as running: the kernel
          // answered this later one, so they ended, unrecorded.
          if (op.unrecorded_before)
            if (auto n = state::end_running_entries(*db_, op.row.kernel_id, "unrecorded", op.row.ended, op.row.seq); !n)
              return n.error();
          return common::ok();
        }
        case Event::Type::kBaseline:
          return state::set_journal_baseline(*db_, kid, op.journal.baseline, op.journal.note, op.journal.baseline_bytes);
        case Event::Type::kDeleted:
          return state::set_journal_deleted(*db_, kid, op.journal.deleted);
        case Event::Type::kEndRunning:
          if (auto n = state::end_running_entries(*db_, kid, op.journal.note, op.journal.deleted); !n) return n.error();
          return common::ok();
        case Event::Type::kBegin:  // gathered above
        case Event::Type::kDrop:   // after the commit
        case Event::Type::kSync:
          return common::ok();
      }
      return common::ok();
    });
    if (!outcome(op, st)) return st;
  }
  if (!group.empty())
    if (auto st = flush(); !st) return st;
  if (auto st = tx->commit(); !st) return st;
  running_bytes_.merge(running);
  return common::ok();
}

void Writer::after_commit(std::vector<WriteOp>& ops) {
  for (auto& op : ops) {
    if (op.type == Event::Type::kBegin) {
      retention_->charge(op.row.owner, op.row.bytes);
    } else if (op.type == Event::Type::kEnd) {
      int64_t delta = op.row.bytes;
      if (!running_bytes_.empty())
        if (auto it = running_bytes_.find(entry_key(op.row.kernel_id, op.row.seq)); it != running_bytes_.end()) {
          delta -= it->second;
          running_bytes_.erase(it);
        }
      retention_->charge(op.row.owner, delta);
    } else if (op.type == Event::Type::kDrop) {
      common::Status st = common::ok();
      auto row = state::get_journal(*db_, op.journal.kernel_id);
      if (row) st = retention_->drop(row.value());
      else if (row.error().code != Errc::kNotFound) st = row.error();
      // A live kernel's journal is cleared, not removed: it goes on recording into it.
      if (st && row && op.journal.deleted.empty()) st = state::insert_journal(*db_, op.journal);
      if (op.done) op.done(st);
    } else if (op.type == Event::Type::kSync) {
      if (op.done) op.done(common::ok());
    } else if (op.type == Event::Type::kBaseline && op.journal.baseline_bytes > 0) {
      // The baseline snapshot is the journal's too: its owner pays for it as for the entries.
      if (auto row = state::get_journal(*db_, op.journal.kernel_id)) retention_->charge(row->owner, op.journal.baseline_bytes);
    }
  }
  retention_->enforce(std::chrono::steady_clock::now());
}

void Writer::run() {
  // Prepared, not committed yet (the database was away). Cleared, not freed, after each batch: a
  // batch's ops are built into the capacity the last one left.
  std::vector<WriteOp> pending;
  // Swapped with the queue each batch, so that both keep their capacity: post() does not regrow the
  // queue (moving every event queued so far) as each batch fills it again.
  std::vector<Event> events;
  auto wait = options_.interval;
  auto last = std::chrono::steady_clock::now();  // when the last batch was taken
  bool quiet = true;  // the last interval brought nothing
  for (;;) {
    events.clear();
    bool stopping;
    {
      std::unique_lock lk(mu_);
      // Gather a batch: one transaction for everything an interval brings, counted from the last
      // batch while entries keep coming, and from the first one after an idle spell. The writer idles
      // (and post() wakes it) only after an interval that brought nothing: while entries keep coming it
      // wakes once per batch, on its own, and post() makes no system call.
      if (pending.empty() && queue_.empty() && !stopping_ && quiet) {
        writer_idle_ = true;
        cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
        writer_idle_ = false;
        last = std::chrono::steady_clock::now();
      }
      if (!stopping_ && !sync_wanted_)
        cv_.wait_until(lk, last + wait,
                       [&] { return stopping_ || sync_wanted_ || queued_bytes_ > options_.queue_bytes / 4; });
      last = std::chrono::steady_clock::now();
      events.swap(queue_);
      queued_bytes_ = 0;
      sync_wanted_ = false;
      stopping = stopping_;
    }
    quiet = events.empty();
    prepare_batch(events, options_.inline_output_bytes, workspaces_, pending);
    if (pending.empty()) {
      if (stopping) return;
      continue;
    }
    bool want_guarded = false;
    auto st = apply(pending, Mode::kFast, want_guarded);
    if (!st && want_guarded) st = apply(pending, Mode::kGuarded, want_guarded);
    if (st) {
      after_commit(pending);
      release(pending);
      pending.clear();
      wait = options_.interval;
    } else {
      common::log_warn("msg=\"journal batch not written; retrying\" entries={} error=\"{}\"", pending.size(),
                       st.error().message);
      // Whoever waits for a sync reads what the database has now; the entries stay queued.
      std::vector<WriteOp> keep, gone;
      for (auto& op : pending) {
        if (op.type == Event::Type::kSync) {
          if (op.done) op.done(st);
          gone.push_back(std::move(op));
        } else {
          keep.push_back(std::move(op));
        }
      }
      release(gone);
      pending = std::move(keep);
      wait = std::min<std::chrono::milliseconds>(wait * 2, kMaxBackoff);
      if (stopping && std::chrono::steady_clock::now() > stop_deadline_) {
        common::log_error("msg=\"journal entries lost at shutdown: the database is away\" entries={}", pending.size());
        for (auto& op : pending)
          if (op.done) op.done(st);
        release(pending);
        return;
      }
    }
    std::lock_guard lk(mu_);
    if (stopping && queue_.empty() && pending.empty()) return;
  }
}

}  // namespace cellgate::journal
