// SPDX-License-Identifier: BSD-3-Clause
#include "gateway/embedded_gateway.h"

#include <atomic>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>

#include "common/random.h"
#include "gateway/gateway.h"
#include "gateway/http/listener.h"

namespace cellgate::gateway {

namespace asio = boost::asio;

struct EmbeddedGateway::Impl {
  explicit Impl(Config c) : config(std::move(c)), gateway(io, config), acceptor(http::make_acceptor(io, config.ip, config.port)) {}

  Config config;
  asio::io_context io{1};
  Gateway gateway;
  asio::ip::tcp::acceptor acceptor;
  asio::signal_set signals{io, SIGINT, SIGTERM};
  int port = 0;
  std::atomic<bool> interrupted{false};
  bool stopping = false;  // io thread only
  std::thread thread;

  void stop() {
    if (stopping) return;
    stopping = true;
    boost::system::error_code ignored;
    acceptor.close(ignored);
    signals.cancel(ignored);
    asio::co_spawn(io, gateway.stop(), [this](std::exception_ptr) { io.stop(); });
  }
};

namespace {

Config embedded(Config c) {
  c.ip = "127.0.0.1";
  c.port = 0;
  c.token = common::random_hex(24);
  c.token_generated = true;
  c.shutdown_kernels_on_exit = true;  // the kernels belong to this run
  c.certfile.clear();                 // loopback only: the client speaks plain HTTP
  c.keyfile.clear();
  return c;
}

// By value: co_spawned.
asio::awaitable<void> interrupt_kernel(std::shared_ptr<KernelHub> hub) {
  if (hub->kernel().state() != launcher::KernelState::kDead) co_await hub->kernel().interrupt();
}

}  // namespace

EmbeddedGateway::EmbeddedGateway(Config config) : impl_(std::make_unique<Impl>(embedded(std::move(config)))) {
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->gateway.set_local_endpoint("127.0.0.1", impl_->port);
  asio::co_spawn(impl_->io, http::accept_loop(impl_->acceptor, impl_->gateway, impl_->gateway.limits()), asio::detached);
  auto* impl = impl_.get();
  impl->signals.async_wait([impl](const boost::system::error_code& ec, int) {
    if (ec) return;
    // Interrupt the running cells (as Ctrl-C in Jupyter does): the run sees the cell end, stops
    // before the next one and deletes its kernel, and the destructor then stops the gateway. Kernels
    // run in sessions of their own, so dying here instead would leave them running.
    impl->interrupted = true;
    for (const auto& [id, hub] : impl->gateway.kernels()) {
      asio::co_spawn(impl->io, interrupt_kernel(hub), asio::detached);
    }
  });
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

EmbeddedGateway::~EmbeddedGateway() {
  auto* impl = impl_.get();
  asio::post(impl->io, [impl] { impl->stop(); });
  impl->thread.join();
}

std::string EmbeddedGateway::url() const {
  return fmt::format("http://127.0.0.1:{}{}", impl_->port, impl_->config.base_url);
}

const std::string& EmbeddedGateway::token() const { return impl_->config.token; }

bool EmbeddedGateway::interrupted() const { return impl_->interrupted; }

}  // namespace cellgate::gateway
