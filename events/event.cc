// SPDX-License-Identifier: BSD-3-Clause
// event: one thing that happened to a kernel or a workspace, as the event stream and the log tell it.
#include "events/event.h"

#include <array>
#include <charconv>

namespace cellgate::events {

std::string_view name(EventType type) {
  static constexpr std::array<std::string_view, static_cast<size_t>(EventType::kCount)> kNames = {
      "kernel_started", "kernel_stopped", "kernel_restarted", "kernel_died",    "kernel_culled", "kernel_paused",
      "kernel_resumed", "snapshot",       "restore",          "quota_refused", "egress_refused"};
  const auto i = static_cast<size_t>(type);
  return i < kNames.size() ? kNames[i] : std::string_view("unknown");
}

std::string EventId::text() const { return std::to_string(epoch) + "-" + std::to_string(seq); }

bool EventId::parse(std::string_view text, EventId& out) {
  const auto dash = text.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == text.size() || dash > 20 || text.size() - dash - 1 > 20)
    return false;
  auto number = [](std::string_view s, uint64_t& v) {
    for (char c : s)
      if (c < '0' || c > '9') return false;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size();
  };
  EventId id;
  if (!number(text.substr(0, dash), id.epoch) || !number(text.substr(dash + 1), id.seq)) return false;
  out = id;
  return true;
}

std::string Event::json_line() const {
  nlohmann::json j = data.is_object() ? data : nlohmann::json::object();
  j["id"] = id.text();
  j["type"] = name(type);
  j["owner"] = owner;
  j["time"] = time;
  // Replacement instead of a throw for invalid UTF-8 in a name a client chose.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cellgate::events
