// SPDX-License-Identifier: BSD-3-Clause
// events_api: GET /api/events, the gateway's events (events/) as a Server-Sent Events stream.
#include "gateway/api/events_api.h"

#include <sys/socket.h>

#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/log.h"
#include "events/sse.h"

namespace cellgate::api {

namespace asio = boost::asio;
using asio::awaitable;
using common::Errc;

namespace {

// An EventSource client waits this long before reconnecting; proxies see a piece at least this often.
constexpr int kRetryMs = 2000;
constexpr auto kKeepalive = std::chrono::seconds(15);

class EventStream;

}  // namespace

struct EventsApi::Streams {
  events::EventLog* log = nullptr;
  std::set<EventStream*> open;
  std::map<std::string, int> per_user;
  void wake();
};

namespace {

class EventStream final : public http::ChunkSource {
 public:
  EventStream(std::shared_ptr<EventsApi::Streams> streams, events::Viewer viewer, events::EventId cursor,
              std::string prelude, int fd, size_t batch, asio::any_io_executor ex)
      : streams_(std::move(streams)), viewer_(std::move(viewer)), cursor_(cursor), prelude_(std::move(prelude)),
        fd_(fd), batch_(batch), timer_(ex) {
    streams_->open.insert(this);
    ++streams_->per_user[viewer_.user];
  }
  ~EventStream() override {
    streams_->open.erase(this);
    if (--streams_->per_user[viewer_.user] <= 0) streams_->per_user.erase(viewer_.user);
  }

  awaitable<std::optional<std::string>> next() override {
    if (!prelude_.empty()) co_return std::exchange(prelude_, std::string());
    for (;;) {
      if (dropped_) co_return std::nullopt;
      auto since = streams_->log->since(cursor_, viewer_, batch_);
      if (since.gap) {
        drop();
        co_return std::nullopt;
      }
      cursor_ = since.last;
      if (!since.events.empty()) {
        std::string piece;
        for (const auto& e : since.events) piece += events::sse_frame(*e);
        co_return piece;
      }
      waiting_ = true;
      timer_.expires_after(kKeepalive);
      boost::system::error_code ec;
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      waiting_ = false;
      if (!ec) co_return events::sse_keepalive();  // quiet for a while; a write also notices a client gone
    }
  }

  // Io thread, after an event was published.
  void on_event() {
    if (waiting_) {
      timer_.cancel();
      return;
    }
    // Busy writing: a reader this far behind is dropped now, not buffered for.
    if (!dropped_ && streams_->log->since(cursor_, viewer_, 0).gap) drop();
  }

 private:
  void drop() {
    if (dropped_) return;
    dropped_ = true;
    common::log_warn("user={} msg=\"event stream dropped: the reader fell behind the event buffer\"", viewer_.user);
    // The session is blocked writing to this socket (or about to): shutting it down ends that write
    // with an error, and the session closes the connection. The fd is the session's own for as long as
    // this source exists (the session holds the source while it serves the reply).
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
    timer_.cancel();
  }

  std::shared_ptr<EventsApi::Streams> streams_;
  events::Viewer viewer_;
  events::EventId cursor_;
  std::string prelude_;
  int fd_;
  size_t batch_;
  asio::steady_timer timer_;
  bool waiting_ = false;
  bool dropped_ = false;
};

}  // namespace

void EventsApi::Streams::wake() {
  auto copy = open;  // a stream may go while another is told
  for (auto* s : copy)
    if (open.count(s)) s->on_event();
}

EventsApi::EventsApi(events::EventLog& log, asio::io_context& io, EventStreamLimits limits)
    : log_(log), limits_(limits), streams_(std::make_shared<Streams>()) {
  streams_->log = &log;
  // Publishers run on any thread (snapshots finish on the offload pool): the streams are woken on
  // the io thread. The listener stays set for the log's life (resetting it would race a publisher
  // on the pool); the weak pointer lets a late one find the API gone, and io outlives the gateway.
  std::weak_ptr<Streams> weak = streams_;
  log_.set_listener([&io, weak](const events::EventId&) {
    asio::post(io, [weak] {
      if (auto s = weak.lock()) s->wake();
    });
  });
}

awaitable<http::Reply> EventsApi::stream(Call& call) {
  const auto& user = call.caller.user;
  events::Viewer viewer{user.name, user.admin};
  const auto count = streams_->per_user.find(user.name);
  if (count != streams_->per_user.end() && count->second >= limits_.max_streams_per_user) {
    auto res = http::error_response(call.req, Errc::kForbidden,
                                    "too many event streams open for user " + user.name + " (at most " +
                                        std::to_string(limits_.max_streams_per_user) + ")");
    res.result(http::status::too_many_requests);
    co_return reply(std::move(res));
  }
  std::string prelude = events::sse_retry(kRetryMs);
  events::EventId cursor = log_.last_id();
  const auto last = call.req["Last-Event-ID"];
  if (!last.empty()) {
    events::EventId after;
    if (!events::EventId::parse(std::string_view(last.data(), last.size()), after))
      co_return reply(http::error_response(call.req, Errc::kBadRequest,
                                           "Last-Event-ID must be an id this stream sent (<epoch>-<seq>)"));
    // Events since then, unless the log no longer has them all (or the id is another process's):
    // then the client is told to fetch the state again, and the stream goes on from now.
    auto since = log_.since(after, viewer, 0);
    if (since.gap) prelude += events::sse_resync(cursor);
    else cursor = after;
  }
  http::Response res{http::status::ok, call.req.version()};
  res.set(http::field::content_type, std::string(events::kSseContentType));
  res.set(http::field::cache_control, "no-store");
  res.set("X-Accel-Buffering", "no");  // nginx: pass pieces on as they come
  res.keep_alive(false);
  const int fd = call.caller.peer.fd;
  if (fd >= 0) {
    // What a reader that stops reading can make the host hold for it: this, and one batch.
    const int bytes = limits_.send_buffer_bytes;
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  http::Reply out{std::move(res), std::nullopt, nullptr};
  out.chunks = std::make_shared<EventStream>(streams_, std::move(viewer), cursor, std::move(prelude), fd,
                                             limits_.batch, co_await asio::this_coro::executor);
  co_return out;
}

}  // namespace cellgate::api
