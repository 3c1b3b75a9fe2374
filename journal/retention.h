// SPDX-License-Identifier: BSD-3-Clause
// retention: what each owner's journals may hold (bytes) and for how long (days); the owner pays for
// every entry of their kernels, whoever ran it, and for each journal's baseline snapshot. Oldest first (a
// journal's baseline is older than its entries; without it the journal cannot be reproduced); a deleted
// kernel's journal goes with its last entry, taking its pin and its baseline snapshot along.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "common/result.h"
#include "state/database.h"
#include "state/journal_records.h"

namespace cellgate::workspace {
class WorkspaceManager;
}

namespace cellgate::journal {

struct RetentionDefaults {
  int64_t bytes = int64_t{256} << 20;  // per owner; 0 = no bound
  int64_t days = 30;                   // 0 = no bound
};

// The writer thread's (its own database connection). Keeps each owner's usage in memory once read.
class Retention {
 public:
  Retention(state::Database& db, workspace::WorkspaceManager& workspaces, RetentionDefaults defaults);

  // owner's entries now hold delta more bytes (committed).
  void charge(const std::string& owner, int64_t delta);
  // Drops what is over the bytes of the owners charged since the last call; every age_every, what
  // is older than each owner's days; then the journals of deleted kernels left without entries.
  void enforce(std::chrono::steady_clock::time_point now);
  // Deletes one journal: its entries, its row, its pin and its baseline snapshot.
  common::Status drop(const state::JournalRow& journal);

  static constexpr auto kAgeEvery = std::chrono::minutes(10);
  static constexpr auto kLimitsFor = std::chrono::seconds(60);  // a user's own limits are re-read after this

 private:
  struct Limits {
    int64_t bytes = 0, days = 0;
    std::chrono::steady_clock::time_point read{};
  };
  const Limits& limits_of(const std::string& owner, std::chrono::steady_clock::time_point now);
  // Deletes the given entries (oldest first; seq 0: a baseline, which note then explains) in one
  // transaction, rewrites the pins of their journals and deletes the baseline snapshots.
  common::Status drop_entries(const std::string& owner, const std::vector<state::EntryCost>& entries,
                              const std::string& note = {});
  void delete_baseline_snapshot(const state::JournalRow& journal);
  void drop_over_bytes(const std::string& owner, std::chrono::steady_clock::time_point now);
  void drop_over_age(std::chrono::steady_clock::time_point now);
  void drop_empty_journals();

  state::Database& db_;
  workspace::WorkspaceManager& workspaces_;
  RetentionDefaults defaults_;
  std::unordered_map<std::string, int64_t> usage_;
  std::unordered_map<std::string, Limits> limits_;
  std::set<std::string> charged_;
  std::chrono::steady_clock::time_point next_age_{};
};

}  // namespace cellgate::journal
