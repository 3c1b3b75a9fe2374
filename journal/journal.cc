// SPDX-License-Identifier: BSD-3-Clause
// journal: the execution journal as the gateway holds it.
#include "journal/journal.h"

#include <algorithm>
#include <cstdint>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/log.h"
#include "common/time_format.h"

namespace cellgate::journal {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

// Something the writer thread finishes and an io-thread coroutine waits for (bounded by a timeout).
struct Waiter {
  explicit Waiter(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
  bool done = false;
  common::Status result = common::ok();
};

std::function<void(common::Status)> wake(asio::io_context& io, std::shared_ptr<Waiter> w) {
  return [&io, w](common::Status st) {
    asio::post(io, [w, st = std::move(st)]() mutable {
      w->done = true;
      w->result = std::move(st);
      w->timer.cancel();
    });
  };
}

awaitable<void> wait_for(const std::shared_ptr<Waiter>& w, std::chrono::milliseconds timeout) {
  if (w->done) co_return;
  w->timer.expires_after(timeout);
  boost::system::error_code ec;
  co_await w->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace

Journal::Journal(asio::io_context& io, state::Database& db, JournalConfig config, Writer::Connect connect,
                 workspace::WorkspaceManager& workspaces)
    : io_(io), db_(db), config_(config), writer_(config.writer, std::move(connect), workspaces),
      sweep_timer_(io) {}

Journal::~Journal() { stop(); }

common::Status Journal::start() { return config_.enabled ? writer_.start() : common::ok(); }

void Journal::stop() {
  sweep_timer_.cancel();
  // Entries still open are left as they are: their kernels run on, and a restarted gateway marks them.
  sweep(true);
  writer_.stop();
}

std::shared_ptr<KernelJournal> Journal::open(const std::string& kernel_id, const std::string& owner,
                                             const std::string& kernelspec, const std::string& workspace,
                                             bool snapshots) {
  if (!config_.enabled) return nullptr;
  Event ev{Event::Type::kOpen};
  ev.journal = state::JournalRow{kernel_id, owner, kernelspec, workspace, common::iso8601_now()};
  writer_.post(std::move(ev));
  return std::make_shared<KernelJournal>(*this, kernel_id, owner, config_.bounds,
                                         KernelJournal::Start{1, "", snapshots, snapshots});
}

std::shared_ptr<KernelJournal> Journal::resume(const std::string& kernel_id, const std::string& owner,
                                               const std::string& kernelspec, const std::string& workspace,
                                               bool snapshots, bool running, const std::string& why) {
  if (!config_.enabled) return nullptr;
  auto row = state::get_journal(db_, kernel_id);
  auto last_seq = state::max_journal_seq(db_, kernel_id);
  auto last = state::last_journal_snapshot(db_, kernel_id);
  KernelJournal::Start start;
  start.next_seq = (last_seq ? last_seq.value() : 0) + 1;
  start.last_snapshot = last && !last->empty() ? last.value() : row ? row->baseline : "";
  start.snapshots = snapshots;
  start.baseline_wanted = snapshots && start.next_seq == 1 && (!row || (row->baseline.empty() && row->note.empty()));
  if (!row) {
    // A kernel from before journals were kept (or while they were off): its journal starts now.
    Event ev{Event::Type::kOpen};
    ev.journal = state::JournalRow{kernel_id, owner, kernelspec, workspace, common::iso8601_now()};
    writer_.post(std::move(ev));
  }
  // What a crash left running ended while the gateway was away, or runs on unseen.
  Event ended{Event::Type::kEndRunning};
  ended.journal.kernel_id = kernel_id;
  ended.journal.note = "interrupted";
  ended.journal.deleted = common::iso8601_now();
  writer_.post(std::move(ended));
  auto j = std::make_shared<KernelJournal>(*this, kernel_id, owner, config_.bounds, std::move(start));
  j->mark(Kind::kGatewayRestart,
          running ? "the gateway restarted; the kernel kept running and its memory is intact, but the outputs of "
                    "executions in flight meanwhile were not recorded"
                  : "the gateway restarted and found the kernel dead" + (why.empty() ? "" : ": " + why));
  return j;
}

void Journal::closed(KernelJournal& journal) {
  journal.on_shutdown();
  sweeping_.erase(journal.kernel_id());
  Event ev{Event::Type::kDeleted};
  ev.journal.kernel_id = journal.kernel_id();
  ev.journal.deleted = common::iso8601_now();
  writer_.post(std::move(ev));
}

awaitable<void> Journal::sync(std::chrono::milliseconds timeout) {
  if (!config_.enabled) co_return;
  sweep(true);  // running entries are written as running
  auto w = std::make_shared<Waiter>(io_);
  Event ev{Event::Type::kSync};
  ev.done = wake(io_, w);
  writer_.post(std::move(ev));
  co_await wait_for(w, timeout);
}

awaitable<common::Status> Journal::drop(const state::JournalRow& row, std::shared_ptr<KernelJournal> live) {
  if (!config_.enabled) co_return common::make_error(common::Errc::kUnavailable, "the journal is off");
  co_await sync();
  auto w = std::make_shared<Waiter>(io_);
  Event ev{Event::Type::kDrop};
  ev.journal = row;
  if (live) {
    ev.journal.deleted.clear();
    ev.journal.baseline.clear();
    ev.journal.baseline_bytes = 0;
    ev.journal.note.clear();
  } else if (ev.journal.deleted.empty()) {
    ev.journal.deleted = common::iso8601_now();
  }
  ev.done = wake(io_, w);
  writer_.post(std::move(ev));
  co_await wait_for(w, std::chrono::seconds(30));
  if (!w->done) co_return common::make_error(common::Errc::kUnavailable, "the journal's database did not answer in time");
  if (w->result && live) live->restart_journal();
  co_return w->result;
}

void Journal::begin(const Entry& entry) {
  Event ev{Event::Type::kBegin};
  ev.entry.kernel_id = entry.kernel_id;
  ev.entry.owner = entry.owner;
  ev.entry.seq = entry.seq;
  ev.entry.kind = entry.kind;
  ev.entry.msg_id = entry.msg_id;
  ev.entry.origin = entry.origin;
  ev.entry.silent = entry.silent;
  ev.entry.code = entry.code;
  ev.entry.code_bytes = entry.code_bytes;
  ev.entry.requested_ns = entry.requested_ns;
  ev.entry.started_ns = entry.started_ns;
  ev.entry.snapshot_before = entry.snapshot_before;
  writer_.post(std::move(ev));
}

void Journal::end(Entry entry) {
  Event ev{Event::Type::kEnd};
  ev.entry = std::move(entry);
  writer_.post(std::move(ev));
}

void Journal::baseline(const std::string& kernel_id, const std::string& snapshot, const std::string& note,
                       uint64_t bytes) {
  Event ev{Event::Type::kBaseline};
  ev.journal.kernel_id = kernel_id;
  ev.journal.baseline = snapshot;
  ev.journal.note = note;
  ev.journal.baseline_bytes = snapshot.empty() ? 0 : static_cast<int64_t>(std::min<uint64_t>(bytes, INT64_MAX));
  writer_.post(std::move(ev));
}

void Journal::want_sweep(std::weak_ptr<KernelJournal> recorder) {
  if (auto j = recorder.lock()) sweeping_[j->kernel_id()] = std::move(recorder);
  arm_sweep();
}

void Journal::arm_sweep() {
  if (sweep_armed_) return;
  sweep_armed_ = true;
  sweep_timer_.expires_after(KernelJournal::kBeginAfter);
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // cancelled: the journal is stopping (or gone)
    sweep_armed_ = false;
    sweep(false);
    if (!sweeping_.empty()) arm_sweep();
  });
}

void Journal::sweep(bool begin_all) {
  const auto now = std::chrono::system_clock::now();
  for (auto it = sweeping_.begin(); it != sweeping_.end();) {
    auto j = it->second.lock();
    if (!j || !j->sweep(now, begin_all)) it = sweeping_.erase(it);
    else ++it;
  }
}

}  // namespace cellgate::journal
