// SPDX-License-Identifier: BSD-3-Clause
// sse: events as Server-Sent Events (text/event-stream, the WHATWG HTML standard's framing).
#include "events/sse.h"

namespace cellgate::events {

std::string sse_frame(const Event& event) {
  std::string out = "id: " + event.id.text() + "\nevent: ";
  out += name(event.type);
  out += "\ndata: " + event.json_line() + "\n\n";
  return out;
}

std::string sse_resync(const EventId& from) {
  return "id: " + from.text() + "\nevent: resync\ndata: {\"type\":\"resync\",\"id\":\"" + from.text() + "\"}\n\n";
}

}  // namespace cellgate::events
