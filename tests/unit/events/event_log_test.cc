// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "events/event_log.h"
#include "events/sse.h"

using namespace cellgate::events;
using nlohmann::json;

namespace {
const Viewer kAdmin{"root", true};
std::vector<std::string> types(const EventLog::Since& s) {
  std::vector<std::string> out;
  for (const auto& e : s.events) out.emplace_back(name(e->type));
  return out;
}
}  // namespace

TEST_CASE("event ids: epoch-seq, and nothing else parses", "[events]") {
  EventId id;
  REQUIRE(EventId::parse("1700000000000-42", id));
  CHECK(id.epoch == 1700000000000u);
  CHECK(id.seq == 42);
  CHECK(id.text() == "1700000000000-42");
  for (const char* bad : {"", "-", "1-", "-1", "1--2", "a-1", "1-+2", "1 -2", "1-2 ", "123456789012345678901-1",
                          "1-99999999999999999999", "1-2-3"})
    CHECK_FALSE(EventId::parse(bad, id));
}

TEST_CASE("a user sees their own events, an admin all; Last-Event-ID resumes", "[events]") {
  EventLog log(7);
  auto a = log.publish(EventType::kKernelStarted, "ana", {{"kernel_id", "k1"}});
  log.publish(EventType::kKernelStarted, "ben", {{"kernel_id", "k2"}});
  auto c = log.publish(EventType::kKernelPaused, "ana", {{"kernel_id", "k1"}});
  REQUIRE(a);
  REQUIRE(c);
  CHECK(a->text() == "7-1");

  auto from_start = log.since(EventId{7, 0}, Viewer{"ana", false});
  CHECK(types(from_start) == std::vector<std::string>{"kernel_started", "kernel_paused"});
  CHECK_FALSE(from_start.gap);
  CHECK(from_start.last.seq == 3);
  CHECK(log.since(EventId{7, 0}, kAdmin).events.size() == 3);
  CHECK(log.since(EventId{7, 0}, Viewer{"eve", false}).events.empty());

  auto resumed = log.since(*a, Viewer{"ana", false});
  REQUIRE(resumed.events.size() == 1);
  CHECK(resumed.events[0]->id.seq == c->seq);
  CHECK(log.since(std::nullopt, kAdmin).events.empty());  // a new stream starts from now
}

TEST_CASE("ids of another gateway, the future, or dropped events ask for a resync", "[events]") {
  EventLog log(9, EventLogLimits{3, 1 << 20, std::chrono::milliseconds(0)});
  for (int i = 0; i < 5; ++i) log.publish(EventType::kSnapshot, "ana", {{"n", i}});
  auto other_epoch = log.since(EventId{8, 2}, kAdmin);
  CHECK(other_epoch.gap);
  CHECK(other_epoch.events.size() == 3);  // all that is kept: 3..5
  CHECK(log.since(EventId{9, 99}, kAdmin).gap);
  auto dropped = log.since(EventId{9, 1}, kAdmin);
  CHECK(dropped.gap);
  CHECK(dropped.events.front()->id.seq == 3);
  auto kept = log.since(EventId{9, 2}, kAdmin);
  CHECK_FALSE(kept.gap);
  CHECK(kept.events.size() == 3);
}

TEST_CASE("the log is bounded in events and bytes, whatever is published", "[events]") {
  EventLog log(1, EventLogLimits{1000, 4096, std::chrono::milliseconds(0)});
  for (int i = 0; i < 200; ++i) log.publish(EventType::kKernelDied, "ana", {{"reason", std::string(100, 'x')}});
  auto all = log.since(EventId{1, 0}, kAdmin, 1000);
  CHECK(all.gap);
  CHECK(all.events.size() < 40);  // ~150 bytes each within 4096
  CHECK(all.events.back()->id.seq == 200);
}

TEST_CASE("refusals are rate limited per owner and type, and the next one counts the rest", "[events]") {
  EventLog log(1, EventLogLimits{100, 1 << 20, std::chrono::milliseconds(50)});
  CHECK(log.publish(EventType::kQuotaRefused, "ana", {{"limit", "max_kernels"}}));
  for (int i = 0; i < 10; ++i) CHECK_FALSE(log.publish(EventType::kQuotaRefused, "ana", {{"limit", "max_kernels"}}));
  CHECK(log.publish(EventType::kQuotaRefused, "ben", {}));  // another owner is not held back
  CHECK(log.publish(EventType::kKernelStarted, "ana", {}));  // nor another type
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  auto next = log.publish(EventType::kQuotaRefused, "ana", {});
  REQUIRE(next);
  auto s = log.since(EventId{1, next->seq - 1}, kAdmin);
  REQUIRE(s.events.size() == 1);
  CHECK(s.events[0]->data["suppressed"] == 10);
}

TEST_CASE("SSE frames: one line of JSON per event, hostile names cannot forge a frame", "[events]") {
  EventLog log(5);
  log.publish(EventType::kRestore, "a\nb", {{"workspace", "w\n\ndata: {\"forged\":1}\n\n"}, {"bad", "\xff"}});
  auto e = log.since(EventId{5, 0}, kAdmin).events.at(0);
  const std::string f = sse_frame(*e);
  CHECK(f.rfind("id: 5-1\nevent: restore\ndata: {", 0) == 0);
  CHECK(f.size() >= 2);
  CHECK(f.substr(f.size() - 2) == "\n\n");
  CHECK(f.find('\n') == std::string("id: 5-1").size());
  CHECK(std::count(f.begin(), f.end(), '\n') == 4);  // id, event, data, blank
  auto parsed = json::parse(f.substr(f.find("data: ") + 6));
  CHECK(parsed["type"] == "restore");
  CHECK(parsed["owner"] == "a\nb");
  CHECK(sse_resync(EventId{5, 3}) == "id: 5-3\nevent: resync\ndata: {\"type\":\"resync\",\"id\":\"5-3\"}\n\n");
}

TEST_CASE("publishing from many threads: unique, ordered ids and the listener hears each", "[events]") {
  EventLog log(2);
  std::atomic<int> heard{0};
  log.set_listener([&](const EventId&) { ++heard; });
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] { for (int i = 0; i < 250; ++i) log.publish(EventType::kSnapshot, "u", {}); });
  for (auto& t : ts) t.join();
  CHECK(heard == 1000);
  auto all = log.since(EventId{2, 0}, kAdmin, 5000);
  REQUIRE(all.events.size() == 1000);
  for (size_t i = 0; i < all.events.size(); ++i) CHECK(all.events[i]->id.seq == i + 1);
}
