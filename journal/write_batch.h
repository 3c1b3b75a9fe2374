// SPDX-License-Identifier: BSD-3-Clause
// write_batch: what the journal's writer is given (events), and a batch of them made ready for the
// database before its transaction: rows built, outputs over the inline bound stored as objects and
// pinned for their journal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "journal/entry.h"
#include "state/journal_records.h"

namespace cellgate::workspace {
class WorkspaceManager;
}

namespace cellgate::journal {

// One thing for the writer to do, in the order posted.
struct Event {
  enum class Type {
    kOpen,        // journal: a new journal (an existing one is left as it is)
    kBegin,       // entry: running (inserted so that a crash leaves a trace of it)
    kEnd,         // entry: done (inserted, or the running row finished)
    kBaseline,    // journal.kernel_id, .baseline, .note
    kDeleted,     // journal.kernel_id, .deleted: the kernel is gone
    kEndRunning,  // journal.kernel_id: rows a crashed gateway left running become .note, ended .deleted
    kDrop,        // journal.kernel_id: the owner deletes the journal (done hears how it went)
    kSync,        // done runs once everything posted before is committed (or could not be)
  };
  Type type;
  Entry entry{};
  state::JournalRow journal{};
  std::function<void(common::Status)> done{};  // runs on the writer thread
  uint64_t charged = 0;                        // what post() counted against the queue's bounds
};

constexpr uint64_t kEventOverhead = 256;  // what an event costs the writer's queue beyond its entry's bytes

// An event made ready for the database.
struct WriteOp {
  Event::Type type;
  state::JournalRow journal;
  state::JournalEntryRow row;
  std::function<void(common::Status)> done;
  std::string charged_to;  // the owner whose share the bytes count against ("" for no entry)
  uint64_t charged = 0;
  uint64_t unrecorded_before = 0;
};

// Moves events into ops (appended), in order. Outputs over inline_output_bytes become objects of the
// workspaces' store, committed in one go for the batch; when the store cannot take them, each such
// output says why it was lost and the entry is written without it.
void prepare_batch(std::vector<Event>& events, uint64_t inline_output_bytes, workspace::WorkspaceManager& workspaces,
                   std::vector<WriteOp>& ops);

// "kernel/seq": an entry's key while it is running.
std::string entry_key(const std::string& kernel_id, int64_t seq);

}  // namespace cellgate::journal
