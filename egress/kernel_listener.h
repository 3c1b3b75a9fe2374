// SPDX-License-Identifier: BSD-3-Clause
// kernel_listener: accepts on the listening socket a kernel's jail made in its own network namespace.
#pragma once

#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "common/unique_fd.h"
#include "egress/kernel_table.h"
#include "egress/proxy_services.h"

namespace cellgate::egress {

// Which kernel a connection comes from is known by which listener accepted it: the socket was
// created inside that kernel's network namespace (the only namespace whose loopback reaches it), so
// nothing the kernel sends is trusted for identity. Each accept first waits for a token from the
// kernel's bucket: a kernel that opens connections faster than its rate waits in its own backlog.
class KernelListener : public std::enable_shared_from_this<KernelListener> {
 public:
  // listen_fd: a listening TCP socket; init_pidfd: the jail's init, which ends the listener when it
  // exits (the socket would otherwise keep the jail's network namespace alive). on_end runs once,
  // with this listener, when it stops.
  static std::shared_ptr<KernelListener> start(boost::asio::any_io_executor executor, std::shared_ptr<KernelState> kernel,
                                               common::UniqueFd listen_fd, common::UniqueFd init_pidfd,
                                               ProxyServices& services, std::function<void(KernelListener*)> on_end);
  // Closes the listener (open connections are cut through the kernel's state, not here).
  void stop();

 private:
  KernelListener(boost::asio::any_io_executor executor, std::shared_ptr<KernelState> kernel, ProxyServices& services);
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> watch_init();

  std::shared_ptr<KernelState> kernel_;
  ProxyServices& services_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::posix::stream_descriptor init_;
  std::function<void(KernelListener*)> on_end_;
  bool stopped_ = false;
};

}  // namespace cellgate::egress
