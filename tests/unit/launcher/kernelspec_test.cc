// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/random.h"
#include "kernel-launcher/kernelspec.h"

using namespace cellgate::launcher;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("cg-ks-" + cellgate::common::random_hex(6));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel) << text;
  }
};
}  // namespace

TEST_CASE("a valid kernel.json parses with resources", "[launcher]") {
  TempDir d;
  d.write("good/kernel.json", R"({"argv":["python3","-f","{connection_file}"],"display_name":"Good",
    "language":"python","interrupt_mode":"message","env":{"A":"${B}x"},"metadata":{"debugger":true}})");
  d.write("good/logo-64x64.png", "png");
  d.write("good/kernel.js", "js");
  d.write("good/other.txt", "no");
  auto specs = discover_kernelspecs({d.path.string()});
  REQUIRE(specs.count("good") == 1);
  const auto& s = specs.at("good");
  CHECK(s.interrupt_mode == InterruptMode::kMessage);
  CHECK(s.env.at("A") == "${B}x");
  CHECK(s.resources.size() == 2);
  auto model = kernelspec_model(s, "/base/");
  CHECK(model["resources"]["logo-64x64"] == "/base/kernelspecs/good/logo-64x64.png");
  CHECK(model["resources"]["kernel.js"] == "/base/kernelspecs/good/kernel.js");
  CHECK(model["spec"]["display_name"] == "Good");
  CHECK(substitute_argv(s.argv, "/c.json")[2] == "/c.json");
}

TEST_CASE("a bare python argv[0] is the kernel Python, as jupyter_client makes it sys.executable", "[launcher]") {
  using V = std::vector<std::string>;
  CHECK(substitute_argv({"python", "-m", "octave_kernel", "-f", "{connection_file}"}, "/c.json") ==
        V{"/usr/bin/python3", "-m", "octave_kernel", "-f", "/c.json"});
  CHECK(substitute_argv({"python3", "-m", "ipykernel_launcher"}, "/c")[0] == "/usr/bin/python3");
  CHECK(substitute_argv({"python3.11", "x"}, "/c")[0] == "python3.11");  // a version: found on PATH
  CHECK(substitute_argv({"R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"}, "/c") ==
        V{"R", "--slave", "-e", "IRkernel::main()", "--args", "/c"});
  CHECK(substitute_argv({"/opt/python"}, "/c")[0] == "/opt/python");
}

TEST_CASE("broken kernelspecs are skipped, not fatal", "[launcher]") {
  TempDir d;
  d.write("notjson/kernel.json", "{oops");
  d.write("noargv/kernel.json", R"({"display_name":"x"})");
  d.write("badargv/kernel.json", R"({"argv":[1],"display_name":"x"})");
  d.write("badmode/kernel.json", R"({"argv":["a"],"display_name":"x","interrupt_mode":"weird"})");
  d.write("badenv/kernel.json", R"({"argv":["a"],"display_name":"x","env":{"A":1}})");
  d.write("bad name!/kernel.json", R"({"argv":["a"],"display_name":"x"})");
  d.write("ok/kernel.json", R"({"argv":["a"],"display_name":"x"})");
  auto specs = discover_kernelspecs({d.path.string(), "/nonexistent"});
  CHECK(specs.size() == 1);
  CHECK(specs.count("ok") == 1);
  auto err = load_kernelspec((d.path / "noargv").string(), "noargv");
  REQUIRE_FALSE(err.has_value());
  CHECK(err.error().message.find("argv") != std::string::npos);
}

TEST_CASE("the first directory providing a name wins", "[launcher]") {
  TempDir a, b;
  a.write("k/kernel.json", R"({"argv":["a"],"display_name":"first"})");
  b.write("k/kernel.json", R"({"argv":["b"],"display_name":"second"})");
  auto specs = discover_kernelspecs({a.path.string(), b.path.string()});
  CHECK(specs.at("k").display_name == "first");
}

TEST_CASE("kernelspec names are validated", "[launcher]") {
  CHECK(valid_kernelspec_name("python3"));
  CHECK(valid_kernelspec_name("my-kernel_1.0"));
  CHECK_FALSE(valid_kernelspec_name(""));
  CHECK_FALSE(valid_kernelspec_name(".."));
  CHECK_FALSE(valid_kernelspec_name("a/b"));
  CHECK_FALSE(valid_kernelspec_name("a b"));
}
