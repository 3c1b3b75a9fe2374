// SPDX-License-Identifier: BSD-3-Clause
// event: one thing that happened to a kernel or a workspace, as the event stream and the log tell it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cellgate::events {

enum class EventType : uint8_t {
  kKernelStarted, kKernelStopped, kKernelRestarted, kKernelDied, kKernelCulled, kKernelPaused,
  kKernelResumed, kSnapshot, kRestore, kQuotaRefused, kEgressRefused, kCount
};
// "kernel_started", ... (the SSE event name and the JSON "type").
std::string_view name(EventType type);

// Ids are "<epoch>-<seq>": epoch names this gateway process (its start, in ms), seq counts from 1.
// A Last-Event-ID of another epoch (a gateway since restarted) cannot be resumed from.
struct EventId {
  uint64_t epoch = 0;
  uint64_t seq = 0;
  std::string text() const;
  // Parses "<epoch>-<seq>" (decimal, no sign, no spaces, at most 20 digits each); false otherwise.
  static bool parse(std::string_view text, EventId& out);
};

struct Event {
  EventId id;
  EventType type = EventType::kKernelStarted;
  std::string owner;     // the user it concerns: who may see it besides admins
  std::string time;      // ISO 8601, UTC
  nlohmann::json data;   // an object: kernel_id, kernelspec, reason, workspace, snapshot, limit...
  // {"id","type","owner","time", ...data}: one line of JSON (the SSE data and the log line).
  std::string json_line() const;
};

}  // namespace cellgate::events
