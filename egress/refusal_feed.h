// SPDX-License-Identifier: BSD-3-Clause
// refusal_feed: the proxy's refusals, pushed as they happen to the gateway that watches them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/local/stream_protocol.hpp>
#include <nlohmann/json.hpp>

namespace cellgate::egress {

// A watcher is a control connection that asked {"op":"watch"}: after {"ok":true} it receives one
// JSON line per refused connection (the audit record: kernel, user, host, port, reason, refused_by)
// until it goes away. The gateway turns them into egress_refused events and a metric.
// Bounded: at most kMaxWatchers connections (a new one ends the oldest), each with at most
// kMaxQueued lines not yet written; a line that does not fit is counted, and the next line written
// says how many were lost ("dropped"). A kernel that is refused in a loop costs the proxy this
// much memory at most, whoever watches. runs in: the io thread.
class RefusalFeed {
 public:
  static constexpr size_t kMaxWatchers = 4;
  static constexpr size_t kMaxQueued = 1024;

  void add(boost::asio::local::stream_protocol::socket peer);
  void publish(const nlohmann::json& record);
  size_t watchers() const { return watchers_.size(); }

 private:
  struct Watcher {
    explicit Watcher(boost::asio::local::stream_protocol::socket s) : socket(std::move(s)) {}
    boost::asio::local::stream_protocol::socket socket;
    std::deque<std::string> queue;
    uint64_t dropped = 0;
    bool writing = false;
    bool gone = false;
  };
  void drain(std::shared_ptr<Watcher> w);

  std::vector<std::shared_ptr<Watcher>> watchers_;
};

}  // namespace cellgate::egress
