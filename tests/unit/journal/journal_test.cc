// SPDX-License-Identifier: BSD-3-Clause
// journal_test: the recorder (an entry per execute_request the gateway forwards, filled from the
// kernel's messages whose parent it is, ended by idle + reply, a restart or a sweep; bounded), the
// nbformat rendering of recorded outputs, and the output comparison reproduce uses.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "journal/compare.h"
#include "journal/recorder.h"
#include "journal/render.h"
#include "protocol/message.h"

using namespace cellgate;
using namespace cellgate::journal;
using nlohmann::json;

namespace {

struct ListSink : Sink {
  std::vector<Entry> begun, ended;
  std::vector<std::string> baselines;
  int sweeps = 0;
  void begin(const Entry& e) override { begun.push_back(e); }
  void end(Entry e) override { ended.push_back(std::move(e)); }
  void baseline(const std::string&, const std::string& snapshot, const std::string&, uint64_t) override {
    baselines.push_back(snapshot);
  }
  void want_sweep(std::weak_ptr<KernelJournal>) override { ++sweeps; }
};

protocol::Message request(const std::string& code, bool silent, std::string& msg_id) {
  auto m = protocol::make_message("execute_request", "s", json{{"code", code}, {"silent", silent}}.dump());
  msg_id = protocol::peek_header(m.header)->msg_id;
  return m;
}

protocol::Message reply_to(const std::string& parent, const char* type, json content) {
  return protocol::make_message(type, "k", content.dump(), json{{"msg_id", parent}}.dump());
}

std::shared_ptr<KernelJournal> recorder(ListSink& sink, Bounds bounds = {}) {
  return std::make_shared<KernelJournal>(sink, "k1", "alice", bounds, KernelJournal::Start{1, "snap0", true, true});
}

// The kernel's answer to one execute: busy, a stream, the reply, idle.
void answer(KernelJournal& j, const std::string& id, const std::string& text, const std::string* snapshot) {
  j.on_message(true, id, reply_to(id, "status", {{"execution_state", "busy"}}), nullptr);
  j.on_message(true, id, reply_to(id, "stream", {{"name", "stdout"}, {"text", text}}), nullptr);
  j.on_message(false, id, reply_to(id, "execute_reply", {{"status", "ok"}, {"execution_count", 3}}), snapshot);
  j.on_message(true, id, reply_to(id, "status", {{"execution_state", "idle"}}), nullptr);
}

}  // namespace

TEST_CASE("an execute is recorded from its request to its idle, with who sent it", "[journal]") {
  ListSink sink;
  auto j = recorder(sink);
  CHECK(j->needs_baseline());
  j->set_baseline("snap1", "", 0);
  CHECK_FALSE(j->needs_baseline());
  std::string id;
  j->on_request(request("print(1)", false, id), id, Origin{"alice", client::kExecute, ""});
  CHECK(j->watching());
  const std::string after = "snap2";
  answer(*j, id, "1\n", &after);
  CHECK_FALSE(j->watching());
  REQUIRE(sink.ended.size() == 1);
  const Entry& e = sink.ended[0];
  CHECK(e.seq == 1);
  CHECK(e.code == "print(1)");
  CHECK(e.origin.user == "alice");
  CHECK(e.origin.client == "execute");
  CHECK(e.status == "ok");
  CHECK(e.execution_count == 3);
  CHECK(e.snapshot_before == "snap1");
  CHECK(e.snapshot_after == "snap2");
  REQUIRE(e.outputs.size() == 1);
  CHECK(e.outputs[0].msg_type == "stream");
  // Messages whose parent the gateway never sent are not recorded.
  j->on_message(true, "other", reply_to("other", "stream", {{"name", "stdout"}, {"text", "x"}}), nullptr);
  CHECK(sink.ended.size() == 1);
}

TEST_CASE("a restart ends what runs and is marked; silent executes are marked", "[journal]") {
  ListSink sink;
  auto j = recorder(sink);
  std::string a, b;
  j->on_request(request("x = 1", true, a), a, Origin{"", client::kGateway, ""});
  j->on_request(request("while True: pass", false, b), b, Origin{"alice", client::kWebSocket, "sess"});
  j->on_restart("");
  REQUIRE(sink.ended.size() == 3);
  CHECK(sink.ended[0].silent);
  CHECK(sink.ended[0].status == "restarted");
  CHECK(sink.ended[1].origin.session == "sess");
  CHECK(sink.ended[2].kind == Kind::kRestart);
  CHECK(sink.ended[2].seq == 3);
}

TEST_CASE("what one entry and one kernel hold is bounded", "[journal]") {
  ListSink sink;
  Bounds bounds;
  bounds.entry_bytes = 4096;
  bounds.kernel_open_entries = 2;
  auto j = recorder(sink, bounds);
  std::string ids[3];
  for (auto& id : ids) j->on_request(request(std::string(10000, 'c'), false, id), id, Origin{"alice", client::kExecute, ""});
  // The third is recorded without being followed; every code is cut at entry_bytes.
  REQUIRE(sink.ended.size() == 1);
  CHECK(sink.ended[0].status == "unobserved");
  CHECK(sink.ended[0].code.size() == 4096);
  CHECK(sink.ended[0].code_bytes == 10000);
  for (int i = 0; i < 10; ++i)
    j->on_message(true, ids[0], reply_to(ids[0], "stream", {{"name", "stdout"}, {"text", std::string(1000, 'o')}}), nullptr);
  j->on_message(false, ids[0], reply_to(ids[0], "execute_reply", {{"status", "ok"}}), nullptr);
  j->on_message(true, ids[0], reply_to(ids[0], "status", {{"execution_state", "idle"}}), nullptr);
  REQUIRE(sink.ended.size() == 2);
  CHECK(sink.ended[1].held_bytes() <= 4096);
  CHECK(sink.ended[1].dropped_outputs == 10);
}

TEST_CASE("recorded outputs render as nbformat outputs", "[journal]") {
  std::string outputs = json::array({
      {{"msg_type", "stream"}, {"content", {{"name", "stdout"}, {"text", "a"}}}},
      {{"msg_type", "stream"}, {"content", {{"name", "stdout"}, {"text", "b\n"}}}},
      {{"msg_type", "display_data"},
       {"content", {{"data", {{"text/plain", "fig"}, {"image/png", "iVBOR"}}}, {"metadata", json::object()},
                    {"transient", {{"display_id", "d1"}}}}}},
      {{"msg_type", "update_display_data"},
       {"content", {{"data", {{"text/plain", "fig2"}}}, {"metadata", json::object()}, {"transient", {{"display_id", "d1"}}}}}},
      {{"msg_type", "execute_result"}, {"content", {{"data", {{"text/plain", "42"}}}, {"execution_count", 5}}}},
      {{"msg_type", "stream"}, {"content_sha256", std::string(64, 'e')}, {"content_bytes", 9000}},
      {{"msg_type", "error"}, {"content", {{"ename", "E"}, {"evalue", "v"}, {"traceback", {"t"}}}}},
  }).dump();
  BlobReader read = [](const std::string& hash) -> common::Result<std::string> {
    CHECK(hash == std::string(64, 'e'));
    return json{{"name", "stderr"}, {"text", "big"}}.dump();
  };
  json out = nbformat_outputs(outputs, read);
  REQUIRE(out.size() == 5);
  CHECK(out[0] == json{{"output_type", "stream"}, {"name", "stdout"}, {"text", "ab\n"}});
  CHECK(out[1]["data"] == json{{"text/plain", "fig2"}});
  CHECK(out[2]["execution_count"] == 5);
  CHECK(out[3]["text"] == "big");
  CHECK(out[4]["output_type"] == "error");
}

TEST_CASE("outputs compare after normalisation; images by hash", "[journal]") {
  CHECK(normalise_text("<object at 0x7f3a12bc4d50>  \r\n") == "<object at 0x<addr>>\n");
  CHECK(normalise_text("at 2026-12-03T15:30:46.123Z, took 1.5 s") == "at <datetime>, took <duration>");
  CHECK(normalise_text("id 123e4567-e89b-12d3-a456-426614174000 at 15:30:46") == "id <uuid> at <time>");
  CHECK(normalise_text("0.8444218515250481") == "0.8444218515250481");
  json recorded = json::array({{{"output_type", "stream"}, {"name", "stdout"}, {"text", "a 0x1234abcd\n"}},
                               {{"output_type", "display_data"}, {"data", {{"image/png", "AAAA"}}}}});
  json same = json::array({{{"type", "stream"}, {"name", "stdout"}, {"text", "a "}},
                           {{"type", "stream"}, {"name", "stdout"}, {"text", "0xdeadbeef\n"}},
                           {{"type", "display_data"}, {"data", {{"image/png", "AAAA"}}}}});
  CHECK(compare_outputs(recorded, same).match);
  json other_image = same;
  other_image[2]["data"]["image/png"] = "AAAB";
  auto c = compare_outputs(recorded, other_image);
  CHECK_FALSE(c.match);
  CHECK(c.recorded.find("sha256:") != std::string::npos);
  json random = json::array({{{"type", "stream"}, {"name", "stdout"}, {"text", "0.13\n"}}});
  json random2 = json::array({{{"type", "stream"}, {"name", "stdout"}, {"text", "0.77\n"}}});
  CHECK_FALSE(compare_outputs(random, random2).match);
}
