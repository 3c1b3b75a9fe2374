// SPDX-License-Identifier: BSD-3-Clause
// journal: the execution journal as the gateway holds it: each kernel's recorder, the writer thread
// they feed, and the timer that begins long executions and ends half-answered ones.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "journal/entry.h"
#include "journal/recorder.h"
#include "journal/writer.h"
#include "state/journal_records.h"

namespace cellgate::journal {

struct JournalConfig {
  bool enabled = true;
  Bounds bounds{};
  WriterOptions writer{};
};

// Io thread only (the writer is its own thread). Reads go through the io thread's Database, after sync().
class Journal : public Sink {
 public:
  Journal(boost::asio::io_context& io, state::Database& db, JournalConfig config, Writer::Connect connect,
          workspace::WorkspaceManager& workspaces);
  ~Journal() override;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Starts the writer (its own database connection); an error when it cannot connect.
  common::Status start();
  // Writes what is queued and stops the writer (kernels keep running; their journals resume).
  void stop();
  bool enabled() const { return config_.enabled; }
  const JournalConfig& config() const { return config_; }

  // A new kernel's journal. snapshots: its workspace is snapshotted after every execute (then the first
  // entry waits for a baseline snapshot, the state reproduce restores).
  std::shared_ptr<KernelJournal> open(const std::string& kernel_id, const std::string& owner,
                                      const std::string& kernelspec, const std::string& workspace, bool snapshots);
  // The journal of a kernel a restarted gateway found (running: re-adopted; else dead, with why). Entries
  // a crash left running are marked interrupted, and the restart is marked.
  std::shared_ptr<KernelJournal> resume(const std::string& kernel_id, const std::string& owner,
                                        const std::string& kernelspec, const std::string& workspace, bool snapshots,
                                        bool running, const std::string& why);
  // The kernel was deleted: its journal stays until retention drops it (or its owner does).
  void closed(KernelJournal& journal);
  // Everything recorded so far, running entries too, is committed; returns after at most timeout when
  // the database is away.
  boost::asio::awaitable<void> sync(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The owner deletes a journal: a running kernel's is emptied (and records on), a gone one's removed.
  boost::asio::awaitable<common::Status> drop(const state::JournalRow& row, std::shared_ptr<KernelJournal> live);

  // Sink (the recorders').
  void begin(const Entry& entry) override;
  void end(Entry entry) override;
  void baseline(const std::string& kernel_id, const std::string& snapshot, const std::string& note,
                uint64_t bytes) override;
  void want_sweep(std::weak_ptr<KernelJournal> recorder) override;

  // Entries the writer cut since start (it was behind).
  uint64_t cut() const { return writer_.cut(); }

 private:
  void arm_sweep();
  void sweep(bool begin_all);

  boost::asio::io_context& io_;
  state::Database& db_;
  JournalConfig config_;
  Writer writer_;
  std::unordered_map<std::string, std::weak_ptr<KernelJournal>> sweeping_;  // with open entries, by kernel id
  boost::asio::steady_timer sweep_timer_;
  bool sweep_armed_ = false;
};

}  // namespace cellgate::journal
