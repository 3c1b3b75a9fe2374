// SPDX-License-Identifier: BSD-3-Clause
// coalescing_stream_ops: the template definitions of coalescing_stream.h (included from it only).
#pragma once

namespace cellgate::http {

template <class Next>
template <class Handler, class Buffers>
struct CoalescingStream<Next>::WriteOp final : Waiter, boost::beast::async_base<Handler, executor_type> {
  template <class H>
  WriteOp(H&& h, const executor_type& ex, const Buffers& b)
      : boost::beast::async_base<Handler, executor_type>(std::forward<H>(h), ex), buffers(b) {}

  // Completes the direct write of a large buffer sequence, all of it.
  struct Direct {
    std::shared_ptr<State> st;
    std::unique_ptr<WriteOp> op;
    void operator()(boost::beast::error_code ec, size_t n) {
      op->complete(false, ec, n);
      after_write(st, ec);
    }
  };

  void run(CoalescingStream& s, std::unique_ptr<Waiter> self) override {
    State& st = *s.state_;
    if (st.error) return this->complete(false, st.error, size_t{0});
    const size_t n = boost::asio::buffer_size(buffers);
    if (n < kCopyBelow) {
      if (n == 0) return this->complete(false, boost::beast::error_code{}, n);
      s.accept(buffers, n);
      auto ex = this->get_executor();
      boost::asio::post(ex, Accepted<Handler>{s.state_, this->release_handler(), n});
      return;
    }
    if (!st.pending.empty()) {  // what was accepted first goes out first; run again (first) after it
      st.waiters.insert(st.waiters.begin(), std::move(self));
      s.start_flush();
      return;  // this op may be gone already: the flush can complete at once and run it
    }
    st.in_flight = true;  // until every byte is written: no other write's bytes can come between
    boost::asio::async_write(s.next_, buffers,
                             Direct{s.state_, std::unique_ptr<WriteOp>(static_cast<WriteOp*>(self.release()))});
  }
  void abort(boost::beast::error_code ec) override { this->complete(false, ec, size_t{0}); }

  Buffers buffers;  // the caller's: they stay valid until this completes
};

template <class Next>
template <class Handler>
struct CoalescingStream<Next>::FlushOp final : Waiter, boost::beast::async_base<Handler, executor_type> {
  template <class H>
  FlushOp(H&& h, const executor_type& ex) : boost::beast::async_base<Handler, executor_type>(std::forward<H>(h), ex) {}

  void run(CoalescingStream& s, std::unique_ptr<Waiter> self) override {
    State& st = *s.state_;
    if (st.error) return this->complete(false, st.error);
    if (st.pending.empty()) return this->complete(false, boost::beast::error_code{});
    st.waiters.insert(st.waiters.begin(), std::move(self));
    s.start_flush();
  }
  void abort(boost::beast::error_code ec) override { this->complete(false, ec); }
};

// Completes a copied write. The bytes go out when the handler has started no other write: at the end
// of the last completion in a chain of writes (Beast's, each started by the previous one's handler).
template <class Next>
template <class Handler>
struct CoalescingStream<Next>::Accepted {
  std::shared_ptr<State> st;
  Handler handler;
  size_t n;
  void operator()() {
    const uint64_t generation = st->generation;
    handler(boost::beast::error_code{}, n);
    if (st->owner && st->generation == generation) st->owner->start_flush();
  }
};

template <class Next>
template <class ConstBuffers>
void CoalescingStream<Next>::accept(const ConstBuffers& buffers, size_t n) {
  State& st = *state_;
  const size_t old = st.pending.size();
  st.pending.resize(old + n);
  boost::asio::buffer_copy(boost::asio::buffer(st.pending.data() + old, n), buffers);
  ++st.generation;
  if (st.pending.size() >= kFlushAt) start_flush();
}

template <class Next>
CoalescingStream<Next>::~CoalescingStream() {
  if (!state_) return;
  state_->owner = nullptr;
  auto waiters = std::move(state_->waiters);
  for (auto& w : waiters) w->abort(boost::asio::error::operation_aborted);
}

template <class Next>
template <class ConstBuffers, class WriteHandler>
auto CoalescingStream<Next>::async_write_some(const ConstBuffers& buffers, WriteHandler&& handler) {
  return boost::asio::async_initiate<WriteHandler, void(boost::beast::error_code, size_t)>(
      [this](auto&& h, const ConstBuffers& b) {
        using Handler = std::decay_t<decltype(h)>;
        const size_t n = boost::asio::buffer_size(b);
        if (!state_->in_flight && state_->waiters.empty() && !state_->error && n > 0 && n < kCopyBelow) {
          // What nearly every write is: copied and completed without an operation object.
          accept(b, n);
          auto ex = boost::asio::get_associated_executor(h, get_executor());
          boost::asio::post(ex, Accepted<Handler>{state_, std::forward<decltype(h)>(h), n});
          return;
        }
        submit(std::make_unique<WriteOp<Handler, ConstBuffers>>(std::forward<decltype(h)>(h), get_executor(), b));
      },
      handler, buffers);
}

template <class Next>
template <class FlushHandler>
auto CoalescingStream<Next>::async_flush(FlushHandler&& handler) {
  return boost::asio::async_initiate<FlushHandler, void(boost::beast::error_code)>(
      [this](auto&& h) {
        using Op = FlushOp<std::decay_t<decltype(h)>>;
        submit(std::make_unique<Op>(std::forward<decltype(h)>(h), get_executor()));
      },
      handler);
}

template <class Next>
template <class ConstBuffers>
size_t CoalescingStream<Next>::write_now(const ConstBuffers& buffers) {
  State& st = *state_;
  if (st.in_flight || !st.waiters.empty() || !st.pending.empty() || st.error) return 0;
  boost::beast::error_code ec;
  const size_t sent = coalescing_write_now(next_, buffers, ec);
  if (ec == boost::asio::error::would_block) return 0;
  if (ec) {
    st.error = ec;
    return 0;
  }
  ++st.flushes;
  return sent;
}

template <class Next>
void CoalescingStream<Next>::submit(std::unique_ptr<Waiter> op) {
  if (state_->in_flight || !state_->waiters.empty()) {
    state_->waiters.push_back(std::move(op));
    return;
  }
  Waiter* w = op.get();
  w->run(*this, std::move(op));
}

template <class Next>
void CoalescingStream<Next>::start_flush() {
  State& st = *state_;
  if (st.in_flight || st.pending.empty()) return;  // the write in flight ends with after_write
  ++st.flushes;
  // Most flushes fit in the socket buffer: sent now, they cost no asynchronous operation and no
  // completion handler (a turn of the io loop) after them.
  boost::beast::error_code ec;
  const size_t sent = coalescing_write_now(next_, boost::asio::buffer(st.pending), ec);
  if (ec != boost::asio::error::would_block) {
    if (!ec && sent == st.pending.size()) {
      st.pending.clear();
      return after_write(state_, ec);
    }
    if (ec) return after_write(state_, ec);
  }
  st.in_flight = true;
  st.writing.swap(st.pending);  // both keep their capacity: no allocation per flush
  st.pending.clear();
  st.writing.erase(0, sent);
  struct Done {
    std::shared_ptr<State> st;
    void operator()(boost::beast::error_code ec, size_t) {
      st->writing.clear();
      after_write(st, ec);
    }
  };
  boost::asio::async_write(next_, boost::asio::buffer(st.writing), Done{state_});
}

template <class Next>
void CoalescingStream<Next>::after_write(const std::shared_ptr<State>& st, boost::beast::error_code ec) {
  st->in_flight = false;
  if (ec && !st->error) st->error = ec;
  // In order, until one of them puts a write in flight (its completion comes back here). run() never
  // completes a handler inline, so the stream outlives the loop.
  while (st->owner && !st->in_flight && !st->waiters.empty()) {
    auto w = std::move(st->waiters.front());
    st->waiters.erase(st->waiters.begin());
    Waiter* p = w.get();
    p->run(*st->owner, std::move(w));
  }
  if (st->owner && !st->in_flight && !st->pending.empty()) st->owner->start_flush();
}

template <class Next, class TeardownHandler>
void async_teardown(boost::beast::role_type role, CoalescingStream<Next>& s, TeardownHandler&& handler) {
  // A flush error means the socket is done for; the stream's destruction closes it.
  s.async_flush([role, &s, h = std::forward<TeardownHandler>(handler)](boost::beast::error_code ec) mutable {
    if (ec) return h(ec);
    using boost::beast::websocket::async_teardown;
    async_teardown(role, s.next_layer(), std::move(h));
  });
}

}  // namespace cellgate::http
