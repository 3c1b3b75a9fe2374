// SPDX-License-Identifier: BSD-3-Clause
// embedded_gateway: a whole gateway on a thread of its own, for `cellgate run`.
#include "cli/embedded_gateway.h"

#include <atomic>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>

#include "common/random.h"
#include "gateway/api/router.h"
#include "gateway/gateway.h"
#include "gateway/http/listener.h"
#include "gateway/kernel_manager.h"

namespace cellgate::cli {

namespace asio = boost::asio;

struct EmbeddedGateway::Impl {
  explicit Impl(gateway::Config c)
      : config(std::move(c)), gw(io, config), api(gw), acceptor(http::make_acceptor(io, config.ip, config.port)) {}

  gateway::Config config;
  asio::io_context io{1};
  gateway::Gateway gw;
  api::Router api;
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
    asio::co_spawn(io, gw.stop(), [this](std::exception_ptr) { io.stop(); });
  }
};

namespace {

gateway::Config embedded(gateway::Config c) {
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
asio::awaitable<void> interrupt_kernel(std::shared_ptr<gateway::KernelHub> hub) {
  if (hub->kernel().state() != launcher::KernelState::kDead) co_await hub->kernel().interrupt();
}

}  // namespace

EmbeddedGateway::EmbeddedGateway(gateway::Config config) : impl_(std::make_unique<Impl>(embedded(std::move(config)))) {
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->api.set_local_endpoint("127.0.0.1", impl_->port);
  const http::Limits limits{impl_->config.max_header_bytes, impl_->config.max_body_bytes};
  asio::co_spawn(impl_->io, http::accept_loop(impl_->acceptor, impl_->api, limits), asio::detached);
  auto* impl = impl_.get();
  impl->signals.async_wait([impl](const boost::system::error_code& ec, int) {
    if (ec) return;
    // Interrupt the running cells (as Ctrl-C in Jupyter does): the run sees the cell end, stops
    // before the next one and deletes its kernel, and the destructor then stops the gateway. Kernels
    // run in sessions of their own, so dying here instead would leave them running.
    impl->interrupted = true;
    for (const auto& [id, hub] : impl->gw.kernels().kernels()) {
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

}  // namespace cellgate::cli
