// SPDX-License-Identifier: BSD-3-Clause
// refusal_feed: the proxy's refusals, pushed as they happen to the gateway that watches them.
#include "egress/refusal_feed.h"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace cellgate::egress {

namespace asio = boost::asio;

void RefusalFeed::add(asio::local::stream_protocol::socket peer) {
  std::erase_if(watchers_, [](const auto& w) { return w->gone; });
  if (watchers_.size() >= kMaxWatchers) {
    boost::system::error_code ignored;
    watchers_.front()->gone = true;
    watchers_.front()->socket.close(ignored);
    watchers_.erase(watchers_.begin());
  }
  watchers_.push_back(std::make_shared<Watcher>(std::move(peer)));
}

void RefusalFeed::publish(const nlohmann::json& record) {
  std::erase_if(watchers_, [](const auto& w) { return w->gone && !w->writing; });
  if (watchers_.empty()) return;
  std::string line;
  for (const auto& w : watchers_) {
    if (w->gone) continue;
    if (w->queue.size() >= kMaxQueued) {
      ++w->dropped;
      continue;
    }
    if (w->dropped > 0) {
      nlohmann::json with = record;
      with["dropped"] = w->dropped;
      w->dropped = 0;
      w->queue.push_back(with.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    } else {
      if (line.empty()) line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      w->queue.push_back(line);
    }
    if (!w->writing) drain(w);
  }
}

void RefusalFeed::drain(std::shared_ptr<Watcher> w) {
  w->writing = true;
  asio::co_spawn(
      w->socket.get_executor(),
      [w]() -> asio::awaitable<void> {
        boost::system::error_code ec;
        while (!w->queue.empty() && !w->gone) {
          // The front stays queued while it is written: publish() only appends.
          co_await asio::async_write(w->socket, asio::buffer(w->queue.front()),
                                     asio::redirect_error(asio::use_awaitable, ec));
          if (ec) {
            w->gone = true;  // the watcher went away; add() forgets it
            w->queue.clear();
            break;
          }
          w->queue.pop_front();
        }
        w->writing = false;
      },
      asio::detached);
}

}  // namespace cellgate::egress
