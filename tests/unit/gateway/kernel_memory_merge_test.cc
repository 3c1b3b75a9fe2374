// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/config_error.h"
#include "gateway/kernel_memory_merge.h"
#include "scratch_dir.h"

using namespace cellgate::gateway;

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}
}  // namespace

TEST_CASE("memory merge: starts ksmd at a fixed scan rate with the advisor off, run last", "[gateway]") {
  cellgate::testing::ScratchDir dir;
  const std::string ksm = dir.path() + "/ksm";
  std::filesystem::create_directory(ksm);
  std::ofstream(ksm + "/run") << "0\n";
  std::ofstream(ksm + "/advisor_mode") << "none [scan-time]\n";
  std::ofstream(ksm + "/pages_to_scan") << "500\n";
  std::ofstream(ksm + "/sleep_millisecs") << "20\n";
  const std::string line = start_kernel_memory_merge(ksm, 2500);
  CHECK(read(ksm + "/run") == "1");
  CHECK(read(ksm + "/advisor_mode") == "none");
  CHECK(read(ksm + "/pages_to_scan") == "50");
  CHECK(read(ksm + "/sleep_millisecs") == "20");
  CHECK(line.find("run=1 (was 0)") != std::string::npos);
  CHECK(line.find("advisor_mode=none (was scan-time)") != std::string::npos);
  CHECK(line.find("sleep_millisecs=20 ") != std::string::npos);  // unchanged: no "(was"
  CHECK(line.find("side channel") != std::string::npos);
}

TEST_CASE("memory merge: a kernel without KSM is one line of configuration error, nothing written", "[gateway]") {
  cellgate::testing::ScratchDir dir;
  const std::string ksm = dir.path() + "/ksm";
  CHECK_THROWS_WITH(start_kernel_memory_merge(ksm, 5000),
                    Catch::Contains("this Linux kernel has no KSM") && Catch::Contains("--kernel-memory-merge off"));
  CHECK_FALSE(std::filesystem::exists(ksm));
}
