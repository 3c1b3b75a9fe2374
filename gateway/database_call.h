// SPDX-License-Identifier: BSD-3-Clause
// database_call: a statement run on the database thread (state/database_thread.h), awaited by a coroutine
// of the io thread, which goes on serving meanwhile.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "common/result.h"
#include "state/database_thread.h"

namespace cellgate::gateway {

// Posts work under tenant's share of the thread's queue and resumes, on the caller's executor, with its
// outcome; kTimeout once timeout has passed (a job still queued then is dropped; one running runs on to
// its own deadline, and nobody hears of it); kTooManyRequests at once when the queue or the tenant's
// share is full. Pass named objects, not temporaries (GCC 12 may destroy a temporary in a co_await
// operand twice: gateway/offload.h).
boost::asio::awaitable<common::Status> on_database_thread(state::DatabaseThread& thread, const std::string& tenant,
                                                          const state::DatabaseThread::Work& work,
                                                          std::chrono::milliseconds timeout);

// What a request reads and writes in the state database, awaited so that the io thread, which every
// client shares, never waits on a database across a network: with a database thread (PostgreSQL), each
// call runs there within kDeadline, charged to its tenant's share of that thread's queue, at most
// max_waiting at once from every tenant together; without one (SQLite, a local file), inline on the
// io thread's own connection. Io thread only.
class DatabaseCalls {
 public:
  static constexpr std::chrono::seconds kDeadline{5};
  DatabaseCalls(state::Database& inline_db, int max_waiting) : db_(inline_db), max_waiting_(max_waiting) {}
  // Calls run on thread from now on; null: inline.
  void run_on(state::DatabaseThread* thread) { thread_ = thread; }

  // f(db)'s outcome. Or why the database could not say: kTooManyRequests when the tenant's share of
  // the queue is full; kUnavailable past the deadline ("the database did not answer within 5 s") or
  // when max_waiting calls wait already. An outcome kUnavailable (a connection the server closed while
  // it was idle: the link reconnects meanwhile) is tried twice more, 300 ms apart, within the deadline.
  // f runs on the database thread: it must own what it uses (copies, not references to the caller's).
  template <class T, class F>
  boost::asio::awaitable<common::Result<T>> call(const std::string& tenant, F f) {
    if (!thread_) co_return f(db_);
    // Shared with the job: read only once its done was heard (run() says ok), never while it may run.
    auto out = std::make_shared<std::optional<common::Result<T>>>();
    const state::DatabaseThread::Work work = [out, f](state::Database& db) -> common::Status {
      out->emplace(f(db));
      if (!**out && (*out)->error().code == common::Errc::kUnavailable) return (*out)->error();
      return common::ok();
    };
    auto ran = co_await run(tenant, work);
    if (!ran) co_return ran.error();
    if (!*out) co_return common::make_error(common::Errc::kUnavailable, "the gateway stopped before the statement ran");
    co_return std::move(**out);
  }

 private:
  // Ok once work's done was heard (its last try's outcome is what it wrote); else why it was not.
  boost::asio::awaitable<common::Status> run(const std::string& tenant, const state::DatabaseThread::Work& work);

  state::Database& db_;
  state::DatabaseThread* thread_ = nullptr;
  int max_waiting_;
  int waiting_ = 0;  // calls awaiting the database thread now
};

}  // namespace cellgate::gateway
