// SPDX-License-Identifier: BSD-3-Clause
// event_log: the gateway's recent events, bounded, for GET /api/events and its Last-Event-ID resume.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "events/event.h"

namespace cellgate::events {

struct EventLogLimits {
  size_t max_events = 4096;            // kept for resuming; older ones are dropped
  size_t max_bytes = 4u << 20;         // of their JSON lines together
  // Refusals are caused by the refused client: at most one event of a type per owner this often;
  // the rest are counted into the next one's "suppressed".
  std::chrono::milliseconds refusal_interval{1000};
};

// Who reads: an admin sees every event, a user only those whose owner they are.
struct Viewer {
  std::string user;
  bool admin = false;
  bool sees(const Event& e) const { return admin || e.owner == user; }
};

// Thread-safe: publish() may be called from any thread (snapshots finish on offload threads); each
// call takes one mutex, and events are rare (none per message). Memory is bounded by the limits,
// whoever publishes.
class EventLog {
 public:
  using Clock = std::chrono::steady_clock;
  EventLog(uint64_t epoch, EventLogLimits limits = {});

  // Stamps id and time, keeps the event, writes it to the log (one line: `event={json}`) and calls
  // the listener. Returns the id, or nothing when a refusal was suppressed by the rate limit.
  std::optional<EventId> publish(EventType type, std::string owner, nlohmann::json data);

  struct Since {
    std::vector<std::shared_ptr<const Event>> events;  // after the cursor, visible to the viewer
    bool gap = false;  // events after the cursor were dropped, or it names another epoch: refetch state
    EventId last;      // the newest id looked at (visible or not): the next cursor
  };
  // Events after `after` (nullopt: from now on, none) that viewer may see, at most `limit` of them.
  Since since(const std::optional<EventId>& after, const Viewer& viewer, size_t limit = 256) const;
  EventId last_id() const;

  // Called after each publish, outside the lock, on the publishing thread (the gateway posts
  // to its io thread from here to wake the streams). Set once, before events flow.
  void set_listener(std::function<void(const EventId&)> listener) { listener_ = std::move(listener); }

 private:
  const uint64_t epoch_;
  const EventLogLimits limits_;
  mutable std::mutex mutex_;
  struct Kept {
    std::shared_ptr<const Event> event;
    size_t bytes;
  };
  std::deque<Kept> kept_;
  size_t kept_bytes_ = 0;
  uint64_t seq_ = 0;
  std::map<std::pair<std::string, EventType>, std::pair<Clock::time_point, uint64_t>> refusals_;
  std::function<void(const EventId&)> listener_;
};

}  // namespace cellgate::events
