// SPDX-License-Identifier: BSD-3-Clause
// kernel_listener: accepts on the listening socket a kernel's jail made in its own network namespace.
#include "egress/kernel_listener.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "egress/http_relay.h"
#include "egress/proxy_session.h"
#include "egress/upstream.h"

namespace cellgate::egress {
namespace {

namespace asio = boost::asio;
using asio::redirect_error;
using asio::use_awaitable;

// Answers a connection the kernel may not open (a cap), and records it.
asio::awaitable<void> refuse_connection(asio::ip::tcp::socket socket, std::shared_ptr<KernelState> kernel,
                                        ProxyServices& services, http::status status, std::string why) {
  boost::beast::tcp_stream client(std::move(socket));
  AuditRecord rec = start_record(*kernel, "http", nullptr);
  rec.reason = why;
  rec.refused_by = "limit";
  const auto started = std::chrono::steady_clock::now();
  co_await write_refusal(client, status, why);
  finish_record(services, *kernel, rec, started);
}

}  // namespace

KernelListener::KernelListener(asio::any_io_executor executor, std::shared_ptr<KernelState> kernel, ProxyServices& services)
    : kernel_(std::move(kernel)), services_(services), acceptor_(executor), init_(executor) {}

std::shared_ptr<KernelListener> KernelListener::start(asio::any_io_executor executor, std::shared_ptr<KernelState> kernel,
                                                      common::UniqueFd listen_fd, common::UniqueFd init_pidfd,
                                                      ProxyServices& services, std::function<void(KernelListener*)> on_end) {
  std::shared_ptr<KernelListener> l(new KernelListener(executor, std::move(kernel), services));
  l->on_end_ = std::move(on_end);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  boost::system::error_code ec;
  l->acceptor_.assign(addr.ss_family == AF_INET6 ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), listen_fd.release(), ec);
  if (!ec && init_pidfd) l->init_.assign(init_pidfd.release(), ec);
  if (ec) {
    common::log_warn("kernel={} msg=\"cannot take the jail's proxy socket\" error=\"{}\"", l->kernel_->id, ec.message());
    l->stop();
    return l;
  }
  l->kernel_->attached = true;
  asio::co_spawn(executor, l->accept_loop(), asio::detached);
  if (l->init_.is_open()) asio::co_spawn(executor, l->watch_init(), asio::detached);
  return l;
}

void KernelListener::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  init_.close(ignored);
  kernel_->attached = false;
  if (auto f = std::move(on_end_)) f(this);
}

asio::awaitable<void> KernelListener::accept_loop() {
  auto self = shared_from_this();
  while (!stopped_) {
    // Pace first, accept second: waiting connections stay in the kernel's own backlog.
    std::string why = co_await admit(*kernel_);
    if (stopped_) break;
    boost::system::error_code ec;
    auto socket = co_await acceptor_.async_accept(redirect_error(use_awaitable, ec));
    if (ec == asio::error::operation_aborted || stopped_) break;
    if (ec) {
      // EMFILE and friends: wait a little instead of spinning on the same error.
      asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(100));
      co_await pause.async_wait(redirect_error(use_awaitable, ec));
      continue;
    }
    auto ex = acceptor_.get_executor();
    // The proxy writes what it has when it has it: Nagle would hold a body's last partial segment
    // back until the kernel's delayed ACK (40 ms on Linux) for every chunk relayed.
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    if (why.empty() && kernel_->counters.open >= kernel_->limits.open)
      why = fmt::format("this kernel has {} connections open, its cap", kernel_->limits.open);
    if (!why.empty()) {
      asio::co_spawn(ex, refuse_connection(std::move(socket), kernel_, services_, http::status::forbidden, why), asio::detached);
    } else if (services_.open >= services_.max_open) {
      asio::co_spawn(ex, refuse_connection(std::move(socket), kernel_, services_, http::status::service_unavailable,
                                           "the proxy is at its limit of open connections"), asio::detached);
    } else {
      asio::co_spawn(ex, serve_connection(std::move(socket), kernel_, services_), asio::detached);
    }
  }
}

asio::awaitable<void> KernelListener::watch_init() {
  auto self = shared_from_this();
  boost::system::error_code ec;
  // A pidfd is readable once its process has exited (pidfd_open(2)).
  co_await init_.async_wait(asio::posix::stream_descriptor::wait_read, redirect_error(use_awaitable, ec));
  if (!ec) common::log_info("kernel={} msg=\"jail ended; proxy endpoint closed\"", kernel_->id);
  stop();
}

}  // namespace cellgate::egress
