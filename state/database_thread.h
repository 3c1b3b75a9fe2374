// SPDX-License-Identifier: BSD-3-Clause
// database_thread: a thread with a database connection of its own that runs posted statements in order,
// so that the thread posting them (the gateway's io thread) never waits on the database.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

struct DatabaseThreadOptions {
  // Jobs posted and not finished, in all and per tenant (the user whose kernel or request posted them).
  // Past either, post() refuses at once: one user whose jobs pile up behind a slow database cannot take
  // the queue from the others, and the queue cannot grow without bound.
  size_t max_jobs = 1024;
  size_t max_jobs_per_tenant = 64;
};

// The journal's writer (journal/writer.h) is the same idea for the journal's entries, batched; this one
// runs single jobs whose poster waits for their outcome. A job that fails is not retried: done hears
// why, and the caller decides. A statement that hangs holds this thread for its deadline (10 s + 2 s on
// PostgreSQL, state/postgres_link.h; SQLite's busy timeout), and the jobs behind it wait; nobody else.
class DatabaseThread {
 public:
  using Connect = std::function<common::Result<Database>()>;
  using Work = std::function<common::Status(Database&)>;
  // Runs on this thread, once per accepted job: with work's outcome, or kUnavailable when the thread
  // stopped before running it. Post back to your own thread from here.
  using Done = std::function<void(common::Status)>;
  using JobId = uint64_t;

  DatabaseThread(DatabaseThreadOptions options, Connect connect);
  ~DatabaseThread();
  DatabaseThread(const DatabaseThread&) = delete;
  DatabaseThread& operator=(const DatabaseThread&) = delete;

  // Connects (an error when it cannot: a configuration error for the caller) and starts the thread.
  common::Status start();
  // Runs what is queued for at most grace more (a job already running finishes), ends the rest with
  // kUnavailable, and joins. Later posts are refused.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(5));
  // Any thread. Never waits for the database, only for the queue's mutex. The job's id (for cancel);
  // nullopt when the queue or the tenant's share of it is full, or the thread is not running: then
  // neither work nor done runs.
  std::optional<JobId> post(const std::string& tenant, Work work, Done done);
  // Any thread. For a poster that stopped waiting (its deadline passed): a job still queued is dropped,
  // neither work nor done runs, and its place in the queue and in its tenant's share is free at once;
  // true then. False when it has started (done runs or ran) or is unknown. Without this, jobs nobody
  // waits for would keep their places until the database answered, up to the bounds above.
  bool cancel(JobId id);
  // Jobs refused since start because the queue or a tenant's share was full; jobs cancelled while queued.
  uint64_t refused() const;
  uint64_t cancelled() const;

 private:
  struct Job {
    JobId id;
    std::string tenant;
    Work work;
    Done done;
  };
  void run();
  void finished(const std::string& tenant);  // mu_ held

  DatabaseThreadOptions options_;
  Connect connect_;
  std::optional<Database> db_;  // this thread's

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  size_t held_ = 0;  // posted and not finished: queued or running
  std::unordered_map<std::string, size_t> held_by_tenant_;
  bool running_ = false;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point stop_deadline_{};
  uint64_t refused_ = 0;
  uint64_t cancelled_ = 0;
  JobId next_id_ = 1;
  std::thread thread_;
};

}  // namespace cellgate::state
