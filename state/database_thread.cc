// SPDX-License-Identifier: BSD-3-Clause
// database_thread: a thread with a database connection of its own that runs posted statements in order.
#include "state/database_thread.h"

#include <algorithm>

namespace cellgate::state {

DatabaseThread::DatabaseThread(DatabaseThreadOptions options, Connect connect)
    : options_(options), connect_(std::move(connect)) {}

DatabaseThread::~DatabaseThread() { stop(); }

common::Status DatabaseThread::start() {
  auto db = connect_();
  if (!db) return db.error();
  db_.emplace(std::move(db.value()));
  {
    std::lock_guard lk(mu_);
    running_ = true;
    stopping_ = false;
  }
  thread_ = std::thread([this] { run(); });
  return common::ok();
}

void DatabaseThread::stop(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
    stop_deadline_ = std::chrono::steady_clock::now() + grace;
  }
  cv_.notify_one();
  thread_.join();
}

uint64_t DatabaseThread::refused() const {
  std::lock_guard lk(mu_);
  return refused_;
}

uint64_t DatabaseThread::cancelled() const {
  std::lock_guard lk(mu_);
  return cancelled_;
}

std::optional<DatabaseThread::JobId> DatabaseThread::post(const std::string& tenant, Work work, Done done) {
  JobId id = 0;
  {
    std::lock_guard lk(mu_);
    if (!running_ || stopping_) return std::nullopt;
    size_t& mine = held_by_tenant_[tenant];
    if (held_ >= options_.max_jobs || mine >= options_.max_jobs_per_tenant) {
      if (mine == 0) held_by_tenant_.erase(tenant);
      ++refused_;
      return std::nullopt;
    }
    ++mine;
    ++held_;
    id = next_id_++;
    queue_.push_back(Job{id, tenant, std::move(work), std::move(done)});
  }
  cv_.notify_one();
  return id;
}

bool DatabaseThread::cancel(JobId id) {
  std::function<void(common::Status)> dropped;  // destroyed after the mutex is released
  Work dropped_work;
  std::lock_guard lk(mu_);
  // At most max_jobs long, and only walked for a poster whose deadline passed.
  auto it = std::find_if(queue_.begin(), queue_.end(), [id](const Job& j) { return j.id == id; });
  if (it == queue_.end()) return false;
  dropped = std::move(it->done);
  dropped_work = std::move(it->work);
  const std::string tenant = std::move(it->tenant);
  queue_.erase(it);
  finished(tenant);
  ++cancelled_;
  return true;
}

void DatabaseThread::finished(const std::string& tenant) {
  --held_;
  auto it = held_by_tenant_.find(tenant);
  if (it != held_by_tenant_.end() && --it->second == 0) held_by_tenant_.erase(it);
}

void DatabaseThread::run() {
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    const bool late = stopping_ && std::chrono::steady_clock::now() > stop_deadline_;
    lk.unlock();
    common::Status st = late ? common::Status(common::make_error(common::Errc::kUnavailable,
                                                                 "the gateway stopped before the statement ran"))
                             : job.work(*db_);
    if (job.done) job.done(std::move(st));
    lk.lock();
    finished(job.tenant);
  }
  running_ = false;
}

}  // namespace cellgate::state
