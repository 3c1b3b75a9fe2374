// SPDX-License-Identifier: BSD-3-Clause
// retention: what each owner's journals may hold, and for how long.
#include "journal/retention.h"

#include <fmt/core.h>

#include "common/log.h"
#include "common/time_format.h"
#include "state/users.h"
#include "state/workspace_records.h"
#include "workspace/pins.h"
#include "workspace/workspace_manager.h"

namespace cellgate::journal {

using common::Errc;

namespace {
constexpr int64_t kPage = 256;   // entries looked at per round
constexpr int kMaxRounds = 64;   // per owner per enforce(): the rest waits for the next batch
}  // namespace

Retention::Retention(state::Database& db, workspace::WorkspaceManager& workspaces, RetentionDefaults defaults)
    : db_(db), workspaces_(workspaces), defaults_(defaults) {}

void Retention::charge(const std::string& owner, int64_t delta) {
  auto it = usage_.find(owner);
  if (it == usage_.end()) {
    // First sight of this owner since start: the committed sum already holds delta.
    auto sum = state::journal_bytes_of(db_, owner);
    if (!sum) return;
    usage_[owner] = sum.value();
  } else {
    it->second += delta;
  }
  charged_.insert(owner);
}

const Retention::Limits& Retention::limits_of(const std::string& owner, std::chrono::steady_clock::time_point now) {
  auto it = limits_.find(owner);
  if (it != limits_.end() && now - it->second.read < kLimitsFor) return it->second;
  Limits l{defaults_.bytes, defaults_.days, now};
  // The pool's and notebook-http's owners, and the single-token user, have no row: the defaults apply.
  if (auto user = state::UserStore(db_).get_user(owner)) {
    if (user->limits.journal_bytes) l.bytes = *user->limits.journal_bytes;
    if (user->limits.journal_days) l.days = *user->limits.journal_days;
  }
  return limits_[owner] = l;
}

common::Status Retention::drop_entries(const std::string& owner, const std::vector<state::EntryCost>& entries,
                                       const std::string& note) {
  std::set<std::string> kernels;
  std::vector<state::JournalRow> baselines;
  {
    auto tx = state::Transaction::begin(db_);
    if (!tx) return tx.error();
    for (const auto& e : entries) {
      if (e.seq == 0) {
        auto j = state::get_journal(db_, e.kernel_id);
        if (!j && j.error().code == Errc::kNotFound) continue;
        if (!j) return j.error();
        if (auto st = state::set_journal_baseline(db_, e.kernel_id, "", note, 0); !st) return st;
        if (!j->baseline.empty()) baselines.push_back(std::move(j.value()));
        continue;
      }
      auto st = state::delete_journal_entry(db_, e.kernel_id, e.seq);
      if (!st && st.error().code != Errc::kNotFound) return st;
      if (!e.blobs.empty()) kernels.insert(e.kernel_id);
    }
    if (auto st = tx->commit(); !st) return st;
  }
  for (const auto& j : baselines) delete_baseline_snapshot(j);
  // The store keeps a journal's large outputs while its pin names them: only the remaining entries'.
  workspace::Pins pins(workspaces_.pins());
  for (const auto& k : kernels) {
    auto left = state::journal_blobs(db_, k);
    if (!left) return left.error();
    if (auto st = pins.replace("journal", owner, k, left.value()); !st) return st;
  }
  return common::ok();
}

void Retention::drop_over_bytes(const std::string& owner, std::chrono::steady_clock::time_point now) {
  const int64_t limit = limits_of(owner, now).bytes;
  auto it = usage_.find(owner);
  if (limit <= 0 || it == usage_.end() || it->second <= limit) return;
  // Down to 90%, so that an owner at the bound is not trimmed at every batch.
  const int64_t target = limit - limit / 10;
  int64_t usage = it->second;
  const std::string note =
      fmt::format("dropped by retention: the owner's journals may hold {} bytes (journal_bytes)", limit);
  for (int round = 0; round < kMaxRounds && usage > target; ++round) {
    auto oldest = state::oldest_journal_entries(db_, owner, kPage, std::nullopt, true);
    if (!oldest || oldest->empty()) break;
    std::vector<state::EntryCost> doomed;
    for (auto& e : oldest.value()) {
      if (usage <= target) break;
      usage -= e.bytes;
      doomed.push_back(std::move(e));
    }
    if (auto st = drop_entries(owner, doomed, note); !st) {
      common::log_warn("owner={} msg=\"journal retention failed\" error=\"{}\"", owner, st.error().message);
      break;
    }
  }
  // Entries dropped while running, or finished after: the sum is the truth.
  if (auto sum = state::journal_bytes_of(db_, owner)) it->second = sum.value();
}

void Retention::drop_over_age(std::chrono::steady_clock::time_point now) {
  auto owners = state::journal_owners(db_);
  if (!owners) return;
  const auto wall = std::chrono::system_clock::now();
  for (const auto& owner : owners.value()) {
    const int64_t days = limits_of(owner, now).days;
    if (days <= 0) continue;
    const std::string cutoff = common::iso8601(wall - std::chrono::hours(24) * days);
    bool dropped = false;
    for (int round = 0; round < kMaxRounds; ++round) {
      auto old = state::oldest_journal_entries(db_, owner, kPage, cutoff);
      if (!old || old->empty()) break;
      if (auto st = drop_entries(owner, old.value()); !st) {
        common::log_warn("owner={} msg=\"journal retention by age failed\" error=\"{}\"", owner, st.error().message);
        break;
      }
      dropped = true;
    }
    if (auto it = usage_.find(owner); dropped && it != usage_.end())
      if (auto sum = state::journal_bytes_of(db_, owner)) it->second = sum.value();
  }
}

void Retention::drop_empty_journals() {
  auto empty = state::empty_deleted_journals(db_);
  if (!empty) return;
  for (const auto& j : empty.value()) {
    if (auto st = drop(j); !st)
      common::log_warn("kernel={} msg=\"cannot drop an empty journal\" error=\"{}\"", j.kernel_id, st.error().message);
  }
}

void Retention::enforce(std::chrono::steady_clock::time_point now) {
  auto charged = std::move(charged_);
  charged_.clear();
  bool any = false;
  for (const auto& owner : charged) {
    const auto before = usage_[owner];
    drop_over_bytes(owner, now);
    any = any || usage_[owner] != before;
  }
  if (now >= next_age_) {
    next_age_ = now + kAgeEvery;
    drop_over_age(now);
    any = true;
  }
  if (any) drop_empty_journals();
}

void Retention::delete_baseline_snapshot(const state::JournalRow& j) {
  if (j.baseline.empty()) return;
  // The snapshot the journal is reproduced from: labelled (kept by snapshot retention) for as long as
  // the journal keeps it, and no longer.
  workspace::WorkspaceRef ref{j.owner, j.workspace};
  if (auto ws = workspaces_.open(ref)) {
    auto st = ws->delete_snapshot(j.baseline);
    if (!st && st.error().code != Errc::kNotFound)
      common::log_warn("kernel={} msg=\"cannot delete the journal's baseline snapshot\" error=\"{}\"", j.kernel_id,
                       st.error().message);
  }
  (void)state::delete_snapshot(db_, j.owner, j.workspace, j.baseline);
}

common::Status Retention::drop(const state::JournalRow& j) {
  delete_baseline_snapshot(j);
  auto st = state::delete_journal(db_, j.kernel_id);
  if (!st && st.error().code != Errc::kNotFound) return st;
  if (auto pin = workspace::Pins(workspaces_.pins()).remove("journal", j.owner, j.kernel_id); !pin) return pin;
  if (auto it = usage_.find(j.owner); it != usage_.end())
    if (auto sum = state::journal_bytes_of(db_, j.owner)) it->second = sum.value();
  return common::ok();
}

}  // namespace cellgate::journal
