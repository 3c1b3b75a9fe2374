// SPDX-License-Identifier: BSD-3-Clause
// start_gate: bounds the kernel starts in flight, in all and per user, with a bounded queue.
#include "gateway/start_gate.h"

#include <list>
#include <map>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

namespace cellgate::gateway {

namespace asio = boost::asio;
using common::Errc;
using common::make_error;

namespace {

struct Waiter {
  Waiter(asio::io_context& io, std::string u) : user(std::move(u)), timer(io) {}
  std::string user;
  asio::steady_timer timer;  // cancelled when the waiter is let through or the gate closes
  bool granted = false;
};

int count(const std::map<std::string, int>& m, const std::string& user) {
  auto it = m.find(user);
  return it == m.end() ? 0 : it->second;
}

void decrement(std::map<std::string, int>& m, const std::string& user) {
  auto it = m.find(user);
  if (it != m.end() && --it->second <= 0) m.erase(it);
}

}  // namespace

struct StartGate::State {
  StartLimits limits;
  int in_flight = 0;
  std::map<std::string, int> in_flight_by_user;
  std::list<std::shared_ptr<Waiter>> queue;  // arrival order
  std::map<std::string, int> queued_by_user;
  bool closed = false;

  bool fits(const std::string& user) const {
    if (limits.in_flight > 0 && in_flight >= limits.in_flight) return false;
    return limits.in_flight_per_user <= 0 || count(in_flight_by_user, user) < limits.in_flight_per_user;
  }
  void take(const std::string& user) {
    ++in_flight;
    ++in_flight_by_user[user];
  }
  // The first waiters that now fit, in arrival order; one held back only by its user's bound does
  // not hold back those behind it.
  void let_through() {
    for (auto it = queue.begin(); it != queue.end();) {
      if (limits.in_flight > 0 && in_flight >= limits.in_flight) return;
      if (!fits((*it)->user)) {
        ++it;
        continue;
      }
      auto w = *it;
      it = queue.erase(it);
      decrement(queued_by_user, w->user);
      take(w->user);
      w->granted = true;
      w->timer.cancel();
    }
  }
  void give_back(const std::string& user) {
    --in_flight;
    decrement(in_flight_by_user, user);
    if (!closed) let_through();
  }
  void forget(const std::shared_ptr<Waiter>& w) {
    for (auto it = queue.begin(); it != queue.end(); ++it) {
      if (*it != w) continue;
      queue.erase(it);
      decrement(queued_by_user, w->user);
      return;
    }
  }
  std::string bounds() const {
    return fmt::format("max_starting {}, max_starting_per_user {}", limits.in_flight, limits.in_flight_per_user);
  }
};

StartGate::Slot::Slot(std::weak_ptr<State> state, std::string user) : state_(std::move(state)), user_(std::move(user)) {}

StartGate::Slot::Slot(Slot&& other) noexcept : state_(std::move(other.state_)), user_(std::move(other.user_)) {
  other.state_.reset();
}

StartGate::Slot::~Slot() {
  if (auto s = state_.lock()) s->give_back(user_);
}

StartGate::StartGate(asio::io_context& io, StartLimits limits) : io_(io), state_(std::make_shared<State>()) {
  state_->limits = limits;
}

StartGate::~StartGate() { close(); }

asio::awaitable<common::Result<StartGate::Slot>> StartGate::enter(std::string user) {
  auto s = state_;
  if (s->closed) co_return make_error(Errc::kUnavailable, "the gateway is stopping");
  // let_through() leaves no waiter that fits: one that fits now is not jumping the queue.
  if (s->fits(user)) {
    s->take(user);
    co_return Slot(s, user);
  }
  const StartLimits& l = s->limits;
  // The user's own bound: 429, theirs to slow down (RFC 6585), where a full gateway is 503.
  if (count(s->queued_by_user, user) >= l.queue_per_user)
    co_return make_error(Errc::kTooManyRequests,
                         fmt::format("too many kernel starts: {} of user {}'s are starting and {} waiting "
                                     "(max_starting_per_user {}, start_queue_per_user {}); try again later",
                                     count(s->in_flight_by_user, user), user, count(s->queued_by_user, user),
                                     l.in_flight_per_user, l.queue_per_user));
  if (static_cast<int>(s->queue.size()) >= l.queue)
    co_return make_error(Errc::kUnavailable,
                         fmt::format("too many kernel starts: {} are starting and {} waiting (max_starting {}, "
                                     "start_queue {}); try again later",
                                     s->in_flight, s->queue.size(), l.in_flight, l.queue));
  auto w = std::make_shared<Waiter>(io_, user);
  s->queue.push_back(w);
  ++s->queued_by_user[user];
  w->timer.expires_after(l.wait);
  boost::system::error_code ec;
  co_await w->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (w->granted) co_return Slot(s, user);
  s->forget(w);
  if (s->closed) co_return make_error(Errc::kUnavailable, "the gateway is stopping");
  const auto waited = std::chrono::duration_cast<std::chrono::seconds>(l.wait).count();
  if (l.in_flight <= 0 || s->in_flight < l.in_flight)  // the gateway had room: the user's own starts held it
    co_return make_error(Errc::kTooManyRequests,
                         fmt::format("kernel start waited {} s for its turn behind {} of user {}'s "
                                     "(max_starting_per_user {}); try again later",
                                     waited, count(s->in_flight_by_user, user), user, l.in_flight_per_user));
  co_return make_error(Errc::kUnavailable,
                       fmt::format("kernel start waited {} s for its turn ({}); try again later", waited, s->bounds()));
}

void StartGate::close() {
  state_->closed = true;
  for (auto& w : state_->queue) w->timer.cancel();
}

nlohmann::json StartGate::status() const {
  const StartLimits& l = state_->limits;
  return {{"in_flight", state_->in_flight},
          {"queued", state_->queue.size()},
          {"limits",
           {{"max_starting", l.in_flight},
            {"max_starting_per_user", l.in_flight_per_user},
            {"start_queue", l.queue},
            {"start_queue_per_user", l.queue_per_user}}}};
}

}  // namespace cellgate::gateway
