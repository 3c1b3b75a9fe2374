// SPDX-License-Identifier: BSD-3-Clause
// kernel_lender: kernels lent to one request at a time, replaced when they die.
#include "nbhttp/kernel_lender.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include "common/log.h"

namespace cellgate::nbhttp {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;
using common::make_error;
using launcher::KernelState;

namespace {

// A kernel restarting on its own (and re-seeding) comes back without a wake-up: poll for it.
constexpr auto kPoll = std::chrono::milliseconds(250);
constexpr auto kRetryAfterFailure = std::chrono::seconds(5);

bool ready(KernelHub& hub) {
  auto s = hub.kernel().state();
  return s == KernelState::kIdle || s == KernelState::kBusy;
}

}  // namespace

KernelLender::KernelLender(asio::io_context& io, gateway::KernelManager& kernels, state::User user,
                           gateway::KernelManager::StartOptions start, int size, int max_waiters)
    : io_(io), kernels_(kernels), user_(std::move(user)), start_(std::move(start)), max_waiters_(max_waiters),
      slots_(static_cast<size_t>(size)) {}

awaitable<common::Status> KernelLender::start() {
  // One after another: starting jailed kernels in parallel gains little on a small machine and makes
  // the failure of one (a bad seed) cost every other start.
  // Slots not started yet are not dead: no request may "replace" them meanwhile.
  for (auto& slot : slots_) slot.replacing = true;
  for (auto& slot : slots_) {
    gateway::KernelManager::StartOptions opts = start_;
    auto hub = co_await kernels_.start(user_, std::move(opts));
    if (!hub) {
      co_await stop();
      co_return hub.error();
    }
    slot.hub = hub.value();
    slot.replacing = false;
    wake_one();
  }
  co_return common::ok();
}

awaitable<common::Result<std::shared_ptr<KernelHub>>> KernelLender::acquire(std::chrono::steady_clock::time_point deadline) {
  auto ex = co_await asio::this_coro::executor;
  while (!stopped_) {
    replace_dead();
    for (auto& slot : slots_) {
      if (slot.hub && !slot.busy && ready(*slot.hub)) {
        slot.busy = true;
        co_return slot.hub;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline)
      co_return make_error(Errc::kTimeout, "no kernel became free before the request's deadline");
    if (static_cast<int>(waiters_.size()) >= max_waiters_)
      co_return make_error(Errc::kUnavailable, fmt::format("all kernels are busy and {} requests wait", max_waiters_));
    auto timer = std::make_shared<asio::steady_timer>(ex);
    timer->expires_at(std::min(deadline, std::chrono::steady_clock::now() + kPoll));
    waiters_.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    std::erase(waiters_, timer);
  }
  co_return make_error(Errc::kUnavailable, "the gateway is stopping");
}

void KernelLender::release(const std::shared_ptr<KernelHub>& hub) {
  for (auto& slot : slots_)
    if (slot.hub == hub) slot.busy = false;
  replace_dead();
  wake_one();
}

void KernelLender::wake_one() {
  if (!waiters_.empty()) waiters_.front()->cancel();
}

void KernelLender::replace_dead() {
  if (stopped_) return;
  for (size_t i = 0; i < slots_.size(); ++i) {
    auto& slot = slots_[i];
    if (slot.busy || slot.replacing) continue;
    if (slot.hub && slot.hub->kernel().state() != KernelState::kDead) continue;
    slot.replacing = true;
    asio::co_spawn(io_, replace(this, i), asio::detached);
  }
}

awaitable<void> KernelLender::replace(KernelLender* self, size_t index) {
  if (auto old = self->slots_[index].hub) {
    common::log_warn("kernel={} reason=\"{}\" msg=\"notebook-http kernel died; replacing it\"", old->kernel().id(),
                     old->kernel().reason());
    self->slots_[index].hub.reset();
    std::string id = old->kernel().id();
    co_await self->kernels_.remove(id, "notebook-http");
  }
  while (!self->stopped_) {
    gateway::KernelManager::StartOptions opts = self->start_;
    auto hub = co_await self->kernels_.start(self->user_, std::move(opts));
    if (hub) {
      if (self->stopped_) {
        std::string id = hub.value()->kernel().id();
        co_await self->kernels_.remove(id, "notebook-http");
        break;
      }
      self->slots_[index].hub = hub.value();
      break;
    }
    common::log_error("msg=\"cannot start a notebook-http kernel; retrying\" error=\"{}\"", hub.error().message);
    asio::steady_timer t(self->io_);
    t.expires_after(kRetryAfterFailure);
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  self->slots_[index].replacing = false;
  self->wake_one();
}

awaitable<void> KernelLender::stop() {
  stopped_ = true;
  for (auto& w : waiters_) w->cancel();
  for (auto& slot : slots_) {
    if (!slot.hub) continue;
    std::string id = slot.hub->kernel().id();
    slot.hub.reset();
    co_await kernels_.remove(id, "notebook-http");
  }
}

}  // namespace cellgate::nbhttp
