// SPDX-License-Identifier: BSD-3-Clause
// database_call: a statement run on the database thread, awaited by a coroutine of the io thread.
#include "gateway/database_call.h"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

namespace cellgate::gateway {

namespace asio = boost::asio;
using common::Errc;

boost::asio::awaitable<common::Status> on_database_thread(state::DatabaseThread& thread, const std::string& tenant,
                                                          const state::DatabaseThread::Work& work,
                                                          std::chrono::milliseconds timeout) {
  struct Wait {
    explicit Wait(const asio::any_io_executor& ex) : timer(ex) {}
    asio::steady_timer timer;
    std::optional<common::Status> outcome;
  };
  auto ex = co_await asio::this_coro::executor;
  auto wait = std::make_shared<Wait>(ex);
  // On the database thread: the outcome goes back to the caller's executor, which wakes the caller.
  auto done = [wait, ex](common::Status st) {
    asio::post(ex, [wait, st = std::move(st)]() mutable {
      wait->outcome = std::move(st);
      wait->timer.cancel();
    });
  };
  const auto job = thread.post(tenant, work, std::move(done));
  if (!job) co_return common::make_error(Errc::kTooManyRequests, "the database thread's queue is full");
  // Nothing runs on this executor between the post and this wait: the outcome cannot come before it.
  wait->timer.expires_after(timeout);
  boost::system::error_code ec;
  co_await wait->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (wait->outcome) co_return std::move(*wait->outcome);
  // Nobody waits for it any more: still queued, it gives its place back rather than run for no one.
  thread.cancel(*job);
  co_return common::make_error(Errc::kTimeout, "the database did not answer in time");
}

boost::asio::awaitable<common::Status> DatabaseCalls::run(const std::string& tenant,
                                                          const state::DatabaseThread::Work& work) {
  if (waiting_ >= max_waiting_)
    co_return common::make_error(Errc::kUnavailable, "too many requests are waiting for the database");
  ++waiting_;
  struct Waiting {
    int& n;
    ~Waiting() { --n; }
  } counted{waiting_};
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  // The database thread's connection may be one the server closed while it was idle (a restart): the
  // first statement on it fails, and the link reconnects in the background (state/postgres_link.h).
  // Two more tries, 300 ms apart, give that reconnect its time without holding any thread.
  for (int attempt = 0;; ++attempt) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto ran = co_await on_database_thread(*thread_, tenant, work, std::max(left, std::chrono::milliseconds(1)));
    if (ran) co_return common::ok();
    const Errc code = ran.error().code;
    if (code == Errc::kTooManyRequests) co_return ran.error();
    if (code == Errc::kTimeout)
      co_return common::make_error(Errc::kUnavailable,
                                   fmt::format("the database did not answer within {} s", kDeadline.count()));
    // work said kUnavailable (or the thread stopped, and work never ran): what it wrote says which.
    if (attempt == 2) co_return common::ok();
    asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(300));
    boost::system::error_code ec;
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace cellgate::gateway
