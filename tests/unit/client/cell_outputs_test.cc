// SPDX-License-Identifier: BSD-3-Clause
// CellOutputs: iopub messages become nbformat 4 outputs the way nbclient builds them.
#include "client/cell_outputs.h"

#include <catch2/catch.hpp>

using cellgate::client::CellOutputs;
using nlohmann::json;

namespace {

json stream(const char* name, const char* text) { return {{"name", name}, {"text", text}}; }

}  // namespace

TEST_CASE("consecutive streams of one name merge; another name starts a new output") {
  json cells = json::array({json::object()});
  CellOutputs out;
  out.begin_cell(0, &cells);
  CHECK(out.add("stream", stream("stdout", "a\n")));
  CHECK(out.add("stream", stream("stdout", "b\n")));
  CHECK(out.add("stream", stream("stderr", "oops\n")));
  CHECK(out.add("stream", stream("stdout", "c\n")));
  CHECK_FALSE(out.add("status", {{"execution_state", "idle"}}));
  REQUIRE(out.outputs().size() == 3);
  CHECK(out.outputs()[0] == json{{"output_type", "stream"}, {"name", "stdout"}, {"text", "a\nb\n"}});
  CHECK(out.outputs()[1]["name"] == "stderr");
  CHECK(out.outputs()[2]["text"] == "c\n");
}

TEST_CASE("carriage returns overwrite the line, as a terminal shows it") {
  json cells = json::array({json::object()});
  CellOutputs out;
  out.begin_cell(0, &cells);
  out.add("stream", stream("stdout", "10%\r"));
  out.add("stream", stream("stdout", "50%\r"));
  out.add("stream", stream("stdout", "100%\r\ndone\n"));
  CHECK(out.outputs()[0]["text"] == "100%\ndone\n");
}

TEST_CASE("execute_result keeps its count; errors keep ename, evalue and traceback") {
  json cells = json::array({json::object()});
  CellOutputs out;
  out.begin_cell(0, &cells);
  out.add("execute_result", {{"execution_count", 4}, {"data", {{"text/plain", "2"}}}, {"metadata", json::object()}});
  out.add("error", {{"ename", "ValueError"}, {"evalue", "bad"}, {"traceback", {"line 1", "line 2"}}});
  CHECK(out.execution_count() == 4);
  CHECK(out.outputs()[0] == json{{"output_type", "execute_result"}, {"data", {{"text/plain", "2"}}},
                                 {"metadata", json::object()}, {"execution_count", 4}});
  CHECK(out.outputs()[1] == json{{"output_type", "error"}, {"ename", "ValueError"}, {"evalue", "bad"},
                                 {"traceback", {"line 1", "line 2"}}});
}

TEST_CASE("clear_output clears now, or at the next output with wait") {
  json cells = json::array({json::object()});
  CellOutputs out;
  out.begin_cell(0, &cells);
  out.add("stream", stream("stdout", "old\n"));
  out.add("clear_output", {{"wait", false}});
  CHECK(out.outputs().empty());
  out.add("stream", stream("stdout", "frame 1\n"));
  out.add("clear_output", {{"wait", true}});
  CHECK(out.outputs().size() == 1);
  out.add("display_data", {{"data", {{"text/plain", "frame 2"}}}, {"metadata", json::object()}});
  REQUIRE(out.outputs().size() == 1);
  CHECK(out.outputs()[0]["output_type"] == "display_data");
  CHECK(out.outputs()[0]["data"]["text/plain"] == "frame 2");
}

TEST_CASE("update_display_data replaces the display it names, also in an earlier cell") {
  json cells = json::array({json::object(), json::object()});
  CellOutputs out;
  json shown = {{"data", {{"text/plain", "0%"}}}, {"metadata", json::object()}, {"transient", {{"display_id", "p"}}}};
  out.begin_cell(0, &cells);
  out.add("display_data", shown);
  out.add("update_display_data", {{"data", {{"text/plain", "50%"}}}, {"metadata", json::object()},
                                  {"transient", {{"display_id", "p"}}}});
  CHECK(out.outputs()[0]["data"]["text/plain"] == "50%");
  CHECK_FALSE(out.outputs()[0].contains("transient"));
  cells[0]["outputs"] = out.outputs();
  out.begin_cell(1, &cells);
  out.add("update_display_data", {{"data", {{"text/plain", "100%"}}}, {"metadata", json::object()},
                                  {"transient", {{"display_id", "p"}}}});
  CHECK(out.outputs().empty());
  CHECK(cells[0]["outputs"][0]["data"]["text/plain"] == "100%");
  out.add("update_display_data", {{"data", {{"text/plain", "?"}}}, {"transient", {{"display_id", "unknown"}}}});
  CHECK(out.outputs().empty());
}
