// SPDX-License-Identifier: BSD-3-Clause
// recorder: one kernel's journal as its messages pass: an entry per execute_request the gateway sends,
// filled from the kernel's iopub and reply until its idle status, handed to a Sink when it ends.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "journal/entry.h"
#include "protocol/message.h"

namespace cellgate::journal {

class KernelJournal;

// Where a recorder's entries go (the Journal service, which batches them to its writer thread).
class Sink {
 public:
  virtual ~Sink() = default;
  // The entry runs; it is written as running unless it ends first (sweep() sends it late on purpose).
  virtual void begin(const Entry& entry) = 0;
  virtual void end(Entry entry) = 0;
  // bytes: what the snapshot holds (charged to the journal's owner).
  virtual void baseline(const std::string& kernel_id, const std::string& snapshot, const std::string& note,
                        uint64_t bytes) = 0;
  // An entry opened: call sweep() on this recorder from time to time until it says none is open.
  virtual void want_sweep(std::weak_ptr<KernelJournal> recorder) = 0;
};

// Io thread only. Entries are keyed on the msg_id the gateway read from the request it forwarded; the
// kernel's messages count only when their parent is such an id, and an entry ends at the kernel's idle
// status with that parent plus the reply (or at a restart, a death, or a sweep). What the kernel claims
// (status, execution_count, outputs) is recorded as its claim, bounded (entry.h Bounds).
// Made with make_shared (it hands the sink weak pointers to itself).
class KernelJournal : public std::enable_shared_from_this<KernelJournal> {
 public:
  struct Start {
    int64_t next_seq = 1;
    std::string last_snapshot;     // the workspace as this kernel last saw it
    bool snapshots = false;        // its workspace is snapshotted after every execute
    bool baseline_wanted = false;  // take a snapshot before the first entry (snapshots on, none yet)
  };
  KernelJournal(Sink& sink, std::string kernel_id, std::string owner, Bounds bounds, Start start);

  const std::string& kernel_id() const { return kernel_id_; }
  const std::string& owner() const { return owner_; }
  // The next execute must wait for a snapshot of the workspace: the journal's first entry needs one to
  // reproduce from. set_baseline ends the wait (snapshot "" with a note when it could not be taken).
  bool needs_baseline() const { return baseline_wanted_; }
  void set_baseline(const std::string& snapshot, const std::string& note, uint64_t bytes);
  // The journal was emptied: the next entry is a first one again (its seq goes on counting).
  void restart_journal();

  // An execute_request the gateway is sending to the kernel now. hidden: the gateway's own cell, which
  // clients never see (a seed, a pool claim): recorded as silent whatever its content says.
  void on_request(const protocol::Message& request, const std::string& msg_id, const Origin& origin,
                  bool hidden = false);
  bool watching() const { return !open_.empty(); }
  // A kernel message whose parent msg_id is parent ("": read from its parent_header); snapshot: the
  // workspace snapshot an execute_reply's after-execute hook named (null when it ran none).
  void on_message(bool iopub, std::string_view parent, const protocol::Message& message, const std::string* snapshot);

  // The kernel is restarting (reason "" = on request), died, or is being shut down: what runs ends.
  void on_restart(const std::string& reason);
  void on_died(const std::string& reason);
  void on_shutdown();
  // A marker entry (a gateway restart found the kernel running, or dead).
  void mark(Kind kind, const std::string& reason);

  // Ends entries the kernel left half-answered (idle without a reply, or a reply without idle) for
  // kHalfAnswered, and begins those running longer than kBeginAfter (all, with begin_all). True while
  // any entry is open.
  bool sweep(std::chrono::system_clock::time_point now, bool begin_all = false);
  static constexpr auto kBeginAfter = std::chrono::milliseconds(100);
  static constexpr auto kHalfAnswered = std::chrono::seconds(5);

 private:
  struct Open {
    Entry entry;
    bool replied = false, idle = false, begun = false;
    int64_t half_ns = 0;  // when the first of reply and idle arrived
  };
  // By request msg_id, looked up by a view of each message's parent msg_id (no copy per message).
  struct IdHash {
    using is_transparent = void;
    size_t operator()(std::string_view id) const { return std::hash<std::string_view>{}(id); }
  };
  using OpenMap = std::unordered_map<std::string, Open, IdHash, std::equal_to<>>;

  Entry new_entry(Kind kind);
  void add_output(Open& open, std::string_view msg_type, const protocol::Message& m);
  void finish(const std::string& msg_id, std::string status, const std::string& reason);
  void finish(OpenMap::iterator it, std::string status, const std::string& reason);
  void end_all(const std::string& status, const std::string& reason);

  Sink& sink_;
  std::string kernel_id_, owner_;
  Bounds bounds_;
  int64_t next_seq_;
  std::string last_snapshot_;
  bool snapshots_;
  bool baseline_wanted_;
  OpenMap open_;
  uint64_t open_bytes_ = 0;
  bool sweep_listed_ = false;  // the sink was asked to sweep, and sweep() has not said "none open" since
  // The parent_header text last resolved to an open entry, and that entry's msg_id: a kernel sends the
  // same parent_header with each message of an execution, so one scan of it serves them all.
  std::string last_parent_text_, last_parent_id_;
};

}  // namespace cellgate::journal
