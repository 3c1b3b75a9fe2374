// SPDX-License-Identifier: BSD-3-Clause
// proxy_session: one connection a kernel opened to its proxy endpoint — requests in, decisions, relays.
#pragma once

#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "egress/kernel_table.h"
#include "egress/proxy_services.h"

namespace cellgate::egress {

// Serves the connection until it ends. Order per request: read the header (bounded, with a
// deadline), pace it (the kernel's token bucket; the first request was paced at accept), then
//  - CONNECT host:port: decide (upstream.h), connect, answer 200, then either check the ClientHello
//    (tls_peek.h) and relay bytes (tunnel.h), or, when the rule adds headers, intercept (intercept.h);
//  - absolute-form http://...: decide, connect (or reuse the connection to the same authority),
//    relay the request with its hop-by-hop headers removed, relay the response;
//  - anything else: 400.
// A refusal is an HTTP answer with a one-line reason, and ends the connection. Every upstream
// connection and every refusal is one audit record. runs in: the io thread.
boost::asio::awaitable<void> serve_connection(boost::asio::ip::tcp::socket client, std::shared_ptr<KernelState> kernel,
                                              ProxyServices& services);

}  // namespace cellgate::egress
