// SPDX-License-Identifier: BSD-3-Clause
// counter_store: counters written atomically and read back; taken once; bad files refused in one line.
#include "egress/counter_store.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace cellgate::egress;

namespace {
std::string make_dir() {
  char dir[] = "/tmp/egress-counters-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  return dir;
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
}  // namespace

TEST_CASE("a kernel's counters survive the store being closed and opened again", "[egress]") {
  const std::string dir = make_dir() + "/state";
  {
    auto store = CounterStore::open(dir, ::getuid(), ::getgid(), 16);
    REQUIRE(store);
    CHECK(store->enabled());
    KernelTable table;
    auto k = table.set("k1", "alice", Policy{}, EffectiveLimits{});
    REQUIRE(k);
    CHECK((*k)->charge_in(1000));
    CHECK((*k)->charge_out(20));
    (*k)->counters.connections = 3;
    (*k)->counters.refused = 1;
    (*k)->counters.open = 2;
    REQUIRE(store->save(table));
    struct stat st {};
    REQUIRE(::stat((dir + "/counters.json").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(!std::filesystem::exists(dir + "/counters.json.tmp"));
  }
  auto store = CounterStore::open(dir, ::getuid(), ::getgid(), 16);
  REQUIRE(store);
  CHECK(store->saved_count() == 1);
  auto c = store->take("k1");
  REQUIRE(c);
  CHECK(c->bytes_in == 1000);
  CHECK(c->bytes_out == 20);
  CHECK(c->connections == 3);
  CHECK(c->refused == 1);
  CHECK(c->open == 0);  // connections died with the old proxy
  CHECK(!store->take("k1"));  // handed over once
  CHECK(!store->take("k2"));
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST_CASE("saved counters not taken yet are kept by the next save, and forgotten on remove", "[egress]") {
  const std::string dir = make_dir();
  put(dir + "/counters.json",
      R"({"version":1,"kernels":{"gone":{"bytes_out":1,"bytes_in":2,"connections":3,"refused":4},)"
      R"("later":{"bytes_out":5,"bytes_in":6,"connections":7,"refused":8}}})");
  auto store = CounterStore::open(dir, ::getuid(), ::getgid(), 16);
  REQUIRE(store);
  store->forget("gone");
  KernelTable table;
  auto k = table.set("new", "bob", Policy{}, EffectiveLimits{});
  REQUIRE(k);
  CHECK((*k)->charge_out(9));
  REQUIRE(store->save(table));
  const std::string text = slurp(dir + "/counters.json");
  CHECK(text.find("\"gone\"") == std::string::npos);
  CHECK(text.find("\"later\"") != std::string::npos);
  CHECK(text.find("\"new\"") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a file that is not a counters file is refused with one line", "[egress]") {
  const std::string dir = make_dir();
  for (const char* text : {"not json", R"({"version":2,"kernels":{}})", R"({"version":1})",
                           R"({"version":1,"kernels":{"k":{"bytes_out":-1,"bytes_in":0,"connections":0,"refused":0}}})",
                           R"({"version":1,"kernels":{"k":{"bytes_in":0}}})"}) {
    put(dir + "/counters.json", text);
    auto store = CounterStore::open(dir, ::getuid(), ::getgid(), 16);
    REQUIRE(!store);
    CHECK(store.error().message.rfind("--state-dir: ", 0) == 0);
    CHECK(store.error().message.find('\n') == std::string::npos);
  }
  std::filesystem::remove(dir + "/counters.json");
  REQUIRE(::symlink("/etc/passwd", (dir + "/counters.json").c_str()) == 0);
  CHECK(!CounterStore::open(dir, ::getuid(), ::getgid(), 16));  // O_NOFOLLOW
  std::filesystem::remove(dir + "/counters.json");
  REQUIRE(::symlink("/tmp", (dir + "/link").c_str()) == 0);
  CHECK(!CounterStore::open(dir + "/link", ::getuid(), ::getgid(), 16));
  std::filesystem::remove_all(dir);
}

TEST_CASE("nothing is written while no counter moved", "[egress]") {
  const std::string dir = make_dir();
  auto store = CounterStore::open(dir, ::getuid(), ::getgid(), 16);
  REQUIRE(store);
  KernelTable table;
  auto k = table.set("k", "alice", Policy{}, EffectiveLimits{});
  REQUIRE(k);
  CHECK((*k)->charge_in(5));
  REQUIRE(store->save(table));
  std::filesystem::remove(dir + "/counters.json");
  REQUIRE(store->save(table));
  CHECK(!std::filesystem::exists(dir + "/counters.json"));  // unchanged: not rewritten
  CHECK((*k)->charge_in(5));
  REQUIRE(store->save(table));
  CHECK(slurp(dir + "/counters.json").find("\"bytes_in\":10") != std::string::npos);
  std::filesystem::remove_all(dir);
}
