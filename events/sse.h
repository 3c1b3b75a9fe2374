// SPDX-License-Identifier: BSD-3-Clause
// sse: events as Server-Sent Events (text/event-stream, the WHATWG HTML standard's framing).
#pragma once

#include <string>
#include <string_view>

#include "events/event.h"

namespace cellgate::events {

inline constexpr std::string_view kSseContentType = "text/event-stream; charset=utf-8";

// "id: <id>\nevent: <type>\ndata: <json line>\n\n". The JSON is one line (json_line escapes
// newlines inside strings), so no field can end the frame early or forge another.
std::string sse_frame(const Event& event);
// The first frame of a stream that could not resume from Last-Event-ID: `event: resync`, telling
// the client to fetch the state again (what it missed is gone); carries the id to go on from.
std::string sse_resync(const EventId& from);
// A comment line: keeps proxies from closing an idle stream and shows the client it is alive.
inline std::string sse_keepalive() { return ": keepalive\n\n"; }
// "retry: <ms>\n\n": how long a disconnected EventSource waits before reconnecting.
inline std::string sse_retry(int ms) { return "retry: " + std::to_string(ms) + "\n\n"; }

}  // namespace cellgate::events
