// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/random.h"
#include "kernel-launcher/notebook_file.h"

using namespace cellgate::launcher;
namespace fs = std::filesystem;

namespace {
const char* kNotebook = R"nb({"nbformat":4,"nbformat_minor":5,
  "metadata":{"kernelspec":{"name":"python3","display_name":"Python 3"},"widgets":{"x":1}},
  "cells":[{"cell_type":"markdown","metadata":{},"source":"# Title"},
           {"cell_type":"code","metadata":{"tags":["seed"]},"source":["a = 1\n","print(a)"],"outputs":[],
            "execution_count":null},
           {"cell_type":"code","metadata":{},"source":"b = 2","outputs":[],"execution_count":null}]})nb";
}  // namespace

TEST_CASE("a notebook's code cells come out in order with joined sources", "[launcher]") {
  auto nb = parse_notebook(kNotebook);
  REQUIRE(nb);
  CHECK(nb->kernel_name() == "python3");
  auto cells = nb->code_cells();
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].index == 1);
  CHECK(cells[0].source == "a = 1\nprint(a)");
  CHECK(cells[1].index == 2);
  CHECK(cells[1].source == "b = 2");
}

TEST_CASE("malformed notebooks are refused with the reason", "[launcher]") {
  CHECK(parse_notebook("{").error().message == "not valid JSON");
  CHECK(parse_notebook("[]").error().message == "a notebook is a JSON object");
  CHECK(parse_notebook(R"({"nbformat":3,"cells":[]})").error().message == "only nbformat 4 notebooks are supported");
  CHECK(parse_notebook(R"({"nbformat":4,"cells":{}})").error().message == "\"cells\" must be an array");
  CHECK(parse_notebook(R"({"nbformat":4,"cells":[{"cell_type":"python","source":""}]})").error().message ==
        "cell 1 has no valid cell_type");
  CHECK(parse_notebook(R"({"nbformat":4,"cells":[{"cell_type":"code","source":[1]}]})").error().message ==
        "cell 1 has no valid source");
  auto empty = parse_notebook(R"({"nbformat":4,"cells":[]})");
  REQUIRE(empty);
  CHECK(empty->kernel_name().empty());
}

TEST_CASE("outputs are saved atomically and unknown fields survive", "[launcher]") {
  fs::path dir = fs::temp_directory_path() / ("cg-nb-" + cellgate::common::random_hex(6));
  fs::create_directories(dir);
  auto nb = parse_notebook(kNotebook);
  REQUIRE(nb);
  nb->set_outputs(1, nlohmann::json::array({{{"output_type", "stream"}, {"name", "stdout"}, {"text", "1\n"}}}), 1);
  std::string path = (dir / "out.ipynb").string();
  REQUIRE(save_notebook(*nb, path));
  auto back = load_notebook(path);
  REQUIRE(back);
  CHECK(back->doc["metadata"]["widgets"]["x"] == 1);
  CHECK(back->doc["cells"][1]["execution_count"] == 1);
  CHECK(back->doc["cells"][1]["outputs"][0]["text"] == "1\n");
  CHECK(back->doc["cells"][2]["execution_count"].is_null());
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  CHECK(load_notebook((dir / "missing.ipynb").string()).error().code == cellgate::common::Errc::kNotFound);
  fs::remove_all(dir);
}

TEST_CASE("a notebook's language comes from its kernelspec, else language_info", "[launcher]") {
  auto nb = parse_notebook(R"({"nbformat":4,"cells":[],"metadata":{"kernelspec":{"name":"x","language":"Python"},
                                 "language_info":{"name":"scala"}}})");
  REQUIRE(nb);
  CHECK(nb->language() == "python");
  nb = parse_notebook(R"({"nbformat":4,"cells":[],"metadata":{"language_info":{"name":"R"}}})");
  CHECK(nb->language() == "r");
  nb = parse_notebook(R"({"nbformat":4,"cells":[],"metadata":{"kernelspec":{"language":7}}})");
  CHECK(nb->language().empty());
  CHECK(parse_notebook(R"({"nbformat":4,"cells":[]})")->language().empty());
}
