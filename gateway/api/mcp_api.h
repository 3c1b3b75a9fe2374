// SPDX-License-Identifier: BSD-3-Clause
// mcp_api: /mcp, the MCP streamable HTTP endpoint. Its tools call this gateway's REST API over loopback
// with the caller's token, on threads of their own (a call blocks for as long as its code runs, and the
// io thread must stay free to serve it). Bounded: at most 32 calls run, 8 of them one user's; a user's
// further calls wait in order (at most 32), beyond that 503.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "gateway/api/route.h"

namespace cellgate::client {
class HttpClient;
}
namespace cellgate::mcp {
class McpServer;
}

namespace cellgate::api {

class McpApi {
 public:
  McpApi(boost::asio::io_context& io, std::string base_url);
  // Fails the calls in flight (they wait on this gateway's own, stopped, server) and joins their threads.
  ~McpApi();
  // Where the loopback calls go: the gateway's plain listener.
  void set_local_endpoint(const std::string& ip, int port);
  boost::asio::awaitable<http::Reply> call(Call& call);
  // {"running", "waiting"}, for an admin's /api/status.
  nlohmann::json status() const;

 private:
  struct UserCalls {
    int running = 0;                                                  // holding a thread
    std::deque<std::shared_ptr<boost::asio::steady_timer>> waiting;  // for one of the user's slots, in order
  };
  struct Release;

  boost::asio::io_context& io_;
  std::string base_url_;
  std::string local_ip_;
  int local_port_ = 0;
  int in_flight_ = 0;
  std::map<std::string, UserCalls> users_;  // no entry while a user has no call
  std::shared_ptr<client::HttpClient> backend_;
  std::unique_ptr<mcp::McpServer> server_;
  std::unique_ptr<boost::asio::thread_pool> threads_;  // joined in the destructor, after the backend is stopped
};

}  // namespace cellgate::api
