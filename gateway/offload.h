// SPDX-License-Identifier: BSD-3-Clause
// offload: blocking work (filesystem, snapshots) on a thread pool, awaited from the io thread.
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cellgate::gateway {

class Offload {
 public:
  explicit Offload(size_t threads = 2) : pool_(threads) {}
  ~Offload() { pool_.join(); }
  Offload(const Offload&) = delete;
  Offload& operator=(const Offload&) = delete;

  // The coroutine suspends; fn runs on the pool; the coroutine resumes on its own (io) executor with
  // fn's result. Exceptions thrown by fn are rethrown in the coroutine. Pass lambdas that capture by
  // reference only: GCC 12 may destroy a temporary in a co_await operand twice, which is harmless only
  // for trivially destructible closures.
  template <typename F>
  auto run(F fn) -> boost::asio::awaitable<decltype(fn())>;
  // For work that keeps its own order (a strand per kernel).
  boost::asio::thread_pool::executor_type executor() { return pool_.get_executor(); }
  // Waits for the work in flight (at shutdown, before what it uses goes away).
  void join() { pool_.join(); }

 private:
  boost::asio::thread_pool pool_;
};

template <typename F>
auto Offload::run(F fn) -> boost::asio::awaitable<decltype(fn())> {
  using R = decltype(fn());
  std::optional<R> result;
  std::exception_ptr error;
  auto io_ex = co_await boost::asio::this_coro::executor;
  co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void()>(
      [this, &fn, &result, &error, io_ex](auto handler) {
        boost::asio::post(pool_, [&fn, &result, &error, io_ex, handler = std::move(handler)]() mutable {
          try {
            result.emplace(fn());
          } catch (...) {
            error = std::current_exception();
          }
          boost::asio::post(io_ex, std::move(handler));
        });
      },
      boost::asio::use_awaitable);
  if (error) std::rethrow_exception(error);
  co_return std::move(*result);
}

}  // namespace cellgate::gateway
