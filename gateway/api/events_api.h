// SPDX-License-Identifier: BSD-3-Clause
// events_api: GET /api/events, the gateway's events (events/) as a Server-Sent Events stream.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>

#include "events/event_log.h"
#include "gateway/api/route.h"

namespace cellgate::api {

struct EventStreamLimits {
  int max_streams_per_user = 8;   // more open at once: 429 (each holds a connection and a coroutine)
  int send_buffer_bytes = 64 << 10;  // SO_SNDBUF of a stream's socket: what a reader that stops reading pins
  size_t batch = 256;              // events per piece written
};

// An admin sees every event, a user those about their own kernels and workspaces. A stream starts at
// "now", or after Last-Event-ID (a `resync` event first when that id can no longer be resumed from).
// Memory per stream is bounded whoever reads: streams share the bounded EventLog and each keeps only a
// cursor into it. A reader that falls so far behind that the log has dropped events it has not been
// sent is dropped at once (its socket is shut down); it reconnects, resumes with Last-Event-ID and is
// told to resync. A reader that stops reading pins at most its send buffer, and the session's write
// deadline closes it.
class EventsApi {
 public:
  EventsApi(events::EventLog& log, boost::asio::io_context& io, EventStreamLimits limits = {});
  boost::asio::awaitable<http::Reply> stream(Call& call);

  struct Streams;  // io thread only: the open streams, woken when an event is published

 private:
  events::EventLog& log_;
  EventStreamLimits limits_;
  std::shared_ptr<Streams> streams_;
};

}  // namespace cellgate::api
