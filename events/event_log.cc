// SPDX-License-Identifier: BSD-3-Clause
// event_log: the gateway's recent events, bounded, for GET /api/events and its Last-Event-ID resume.
#include "events/event_log.h"

#include "common/log.h"
#include "common/time_format.h"

namespace cellgate::events {
namespace {

bool is_refusal(EventType t) { return t == EventType::kQuotaRefused || t == EventType::kEgressRefused; }

}  // namespace

EventLog::EventLog(uint64_t epoch, EventLogLimits limits) : epoch_(epoch), limits_(limits) {}

std::optional<EventId> EventLog::publish(EventType type, std::string owner, nlohmann::json data) {
  auto event = std::make_shared<Event>();
  event->type = type;
  event->owner = std::move(owner);
  event->time = common::iso8601_now();
  event->data = data.is_object() ? std::move(data) : nlohmann::json::object();
  std::string line;
  {
    std::lock_guard lock(mutex_);
    if (is_refusal(type)) {
      const auto now = Clock::now();
      if (refusals_.size() > 4096) {  // forget owners quiet for a while
        for (auto it = refusals_.begin(); it != refusals_.end();)
          it = now - it->second.first > limits_.refusal_interval ? refusals_.erase(it) : std::next(it);
      }
      auto [it, fresh] = refusals_.try_emplace({event->owner, type}, Clock::time_point{}, 0);
      if (!fresh && now - it->second.first < limits_.refusal_interval) {
        ++it->second.second;
        return std::nullopt;
      }
      if (it->second.second > 0) event->data["suppressed"] = it->second.second;
      it->second = {now, 0};
    }
    event->id = EventId{epoch_, ++seq_};
    line = event->json_line();
    kept_bytes_ += line.size();
    kept_.push_back({event, line.size()});
    while (!kept_.empty() && (kept_.size() > limits_.max_events || kept_bytes_ > limits_.max_bytes)) {
      kept_bytes_ -= kept_.front().bytes;
      kept_.pop_front();
    }
  }
  common::log_info("event={}", line);
  if (listener_) listener_(event->id);
  return event->id;
}

EventLog::Since EventLog::since(const std::optional<EventId>& after, const Viewer& viewer, size_t limit) const {
  std::lock_guard lock(mutex_);
  Since out;
  out.last = EventId{epoch_, seq_};
  if (!after) return out;  // a new stream starts from now
  uint64_t from = after->seq;
  const uint64_t oldest = kept_.empty() ? seq_ + 1 : kept_.front().event->id.seq;
  if (after->epoch != epoch_ || after->seq > seq_ || from + 1 < oldest) {
    out.gap = true;  // another gateway's id, one from the future, or events already dropped
    from = oldest - 1;
  }
  out.last = EventId{epoch_, from};
  for (auto it = kept_.begin() + static_cast<std::ptrdiff_t>(from + 1 - oldest); it != kept_.end(); ++it) {
    if (out.events.size() >= limit) break;
    out.last = it->event->id;
    if (viewer.sees(*it->event)) out.events.push_back(it->event);
  }
  return out;
}

EventId EventLog::last_id() const {
  std::lock_guard lock(mutex_);
  return EventId{epoch_, seq_};
}

}  // namespace cellgate::events
