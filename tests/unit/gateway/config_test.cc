// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "gateway/config.h"

using namespace cellgate::gateway;

namespace {
Config load(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return load_config(static_cast<int>(argv.size()), argv.data());
}
}  // namespace

TEST_CASE("defaults, flags and generated token", "[gateway]") {
  auto c = load({"--port", "0", "--base-url", "gw", "--allow-env", "A", "--allow-env=B"});
  CHECK(c.port == 0);
  CHECK(c.base_url == "/gw/");
  CHECK(c.token.size() == 48);
  CHECK(c.token_generated);
  CHECK(c.allow_env == std::set<std::string>{"A", "B"});
  CHECK(c.data_dir.front() == '/');
}

TEST_CASE("precedence: flags over env over file", "[gateway]") {
  const char* path = "/tmp/cg-config-test.json";
  std::ofstream(path) << R"({"port": 1234, "token": "fromfile", "allow_env": ["X"], "ip": "127.0.0.2"})";
  ::setenv("CELLGATE_TOKEN", "fromenv", 1);
  auto c = load({"--config", path, "--ip", "127.0.0.3"});
  CHECK(c.port == 1234);
  CHECK(c.token == "fromenv");
  CHECK(c.ip == "127.0.0.3");
  CHECK(c.allow_env.count("X") == 1);
  ::unsetenv("CELLGATE_TOKEN");
  ::unlink(path);
}

TEST_CASE("bad configuration fails with one clear line", "[gateway]") {
  CHECK_THROWS_WITH(load({"--port", "x"}), Catch::Contains("--port"));
  CHECK_THROWS_WITH(load({"--nope", "1"}), Catch::Contains("unknown option --nope"));
  CHECK_THROWS_WITH(load({"--nope"}), Catch::Contains("unknown option --nope"));
  CHECK_THROWS_WITH(load({"--spawner", "docker"}), Catch::Contains("jail or plain"));
  CHECK_THROWS_WITH(load({"--kernel-memory", "5X"}), Catch::Contains("suffix"));
  CHECK_THROWS_WITH(load({"--port"}), Catch::Contains("needs a value"));
  const char* path = "/tmp/cg-config-bad.json";
  std::ofstream(path) << R"({"prot": 1})";
  CHECK_THROWS_WITH(load({"--config", path}), Catch::Contains("unknown key 'prot'"));
  std::ofstream(path) << "[1,2]";
  CHECK_THROWS_WITH(load({"--config", path}), Catch::Contains("not a JSON object"));
  CHECK_THROWS_WITH(load({"--config", "/nonexistent.json"}), Catch::Contains("cannot read"));
  ::unlink(path);
}

TEST_CASE("sizes accept suffixes", "[gateway]") {
  auto c = load({"--kernel-memory", "512M", "--kernel-cpus", "0.5", "--max-body", "1K"});
  CHECK(c.limits.memory_bytes == 512ull << 20);
  CHECK(c.limits.cpus == 0.5);
  CHECK(c.max_body_bytes == 1024);
  CHECK(load({}).max_kernel_message_bytes == 512ull << 20);
  CHECK(load({"--max-kernel-message", "2G"}).max_kernel_message_bytes == 2ull << 30);
  CHECK_THROWS_WITH(load({"--max-kernel-message", "1K"}), Catch::Contains("--max-kernel-message: expected at least 64K"));
  CHECK(!load({}).kernel_memory_merge);
  CHECK(load({"--kernel-memory-merge", "on", "--kernel-memory-merge-rate", "1000"}).kernel_memory_merge_rate == 1000);
  CHECK_THROWS_WITH(load({"--kernel-memory-merge-rate", "0"}), Catch::Contains("--kernel-memory-merge-rate"));
  CHECK_THROWS_WITH(load({"--kernel-memory-merge", "yes"}), "--kernel-memory-merge: expected on or off, got 'yes'");
  CHECK_THROWS_WITH(load({"--kernel-memory-merge", "on", "--spawner", "plain"}), Catch::Contains("needs --spawner jail"));
  CHECK(load({}).kernel_output_rate == 0);
  CHECK(load({"--kernel-output-rate", "0"}).kernel_output_rate == 0);
  CHECK(load({"--kernel-output-rate", "4M"}).kernel_output_rate == 4ull << 20);
  CHECK(load({}).kernel_read_budget == 1ull << 30);
  CHECK(load({"--max-kernel-message", "2G"}).kernel_read_budget == 4ull << 30);
  CHECK(load({"--kernel-read-budget", "8M", "--max-kernel-message", "8M"}).kernel_read_budget == 8ull << 20);
  CHECK_THROWS_WITH(load({"--kernel-read-budget", "8M"}), Catch::Contains("--kernel-read-budget (8388608) is below"));
  CHECK_THROWS_WITH(load({"--kernel-read-budget", "0"}), Catch::Contains("expected a size above 0"));
  for (const char* v : {"inf", "nan", "1e30", "99999999999999999999999", "17179869184G"})
    CHECK_THROWS_WITH(load({"--max-body", v}), Catch::Contains("--max-body: not a size"));
}

TEST_CASE("pool, pausing and heartbeat options", "[gateway]") {
  auto c = load({"--pool", "python3=2", "--pool=xpython=1", "--pool-max-memory", "2G", "--pool-concurrency", "2",
                 "--pause-after", "600", "--freezer", "v1", "--heartbeat-timeout", "10"});
  CHECK(c.pool == std::map<std::string, int>{{"python3", 2}, {"xpython", 1}});
  CHECK(c.pool_max_memory == 2ull << 30);
  CHECK(c.pool_concurrency == 2);
  CHECK(c.pause_after_s == 600);
  CHECK(c.freezer == cellgate::launcher::Freezer::kV1);
  CHECK(c.heartbeat_timeout_s == 10);
  auto d = load({});
  CHECK(d.pool.empty());
  CHECK(d.pause_after_s == 0);
  CHECK(d.freezer == cellgate::launcher::Freezer::kAuto);
  CHECK_THROWS_WITH(load({"--pool", "python3"}), Catch::Contains("NAME=N"));
  CHECK_THROWS_WITH(load({"--pool", "=2"}), Catch::Contains("NAME=N"));
  CHECK_THROWS_WITH(load({"--pool", "python3=-1"}), Catch::Contains("--pool"));
  CHECK_THROWS_WITH(load({"--freezer", "sigstop"}), Catch::Contains("auto, v2 or v1"));
  CHECK_THROWS_WITH(load({"--pool-concurrency", "0"}), Catch::Contains("--pool-concurrency"));
}

TEST_CASE("seed and notebook-http options", "[gateway]") {
  auto c = load({});
  CHECK(c.seed_notebook.empty());
  CHECK(c.notebook_http.empty());
  CHECK(c.seed_timeout_s == 120);
  CHECK(c.notebook_http_kernels == 2);
  CHECK(!c.notebook_http_public);
  CHECK(c.max_body_bytes == 64ull << 20);

  ::setenv("CELLGATE_SEED_NOTEBOOK", "seed.ipynb", 1);
  c = load({"--notebook-http", "api.ipynb", "--notebook-http-pool", "3", "--notebook-http-max-body", "2K",
            "--notebook-http-public", "true", "--seed-timeout", "9"});
  ::unsetenv("CELLGATE_SEED_NOTEBOOK");
  CHECK(c.seed_notebook.front() == '/');  // made absolute
  CHECK(c.seed_notebook.ends_with("/seed.ipynb"));
  CHECK(c.notebook_http.ends_with("/api.ipynb"));
  CHECK(c.notebook_http_kernels == 3);
  CHECK(c.notebook_http_public);
  CHECK(c.seed_timeout_s == 9);
  CHECK(c.max_body_bytes == 2048);  // the endpoints' bodies are the only ones read
  CHECK_THROWS_AS(load({"--notebook-http-pool", "0"}), ConfigError);
  CHECK_THROWS_AS(load({"--seed-timeout", "0"}), ConfigError);
}

TEST_CASE("ipc-tmpfs is auto by default, for the default runtime dir only", "[gateway]") {
  auto c = load({});
  CHECK(c.ipc_tmpfs == "auto");
  CHECK(c.runtime_dir_default);
  c = load({"--runtime-dir", "/tmp/somewhere", "--ipc-tmpfs", "on"});
  CHECK_FALSE(c.runtime_dir_default);
  CHECK(c.ipc_tmpfs == "on");
  CHECK(load({"--ipc-tmpfs", "off"}).ipc_tmpfs == "off");
  CHECK_THROWS_WITH(load({"--ipc-tmpfs", "yes"}), "--ipc-tmpfs: expected auto, on or off, got 'yes'");
}

TEST_CASE("cluster options: only together, with PostgreSQL and the three PEM files", "[gateway][cluster]") {
  auto one = load({});
  CHECK_FALSE(one.clustered());
  CHECK(one.node_id.empty());
  const std::string pg = "postgresql://u@db/cg";
  auto message = [](const std::vector<std::string>& args) {
    try {
      load(args);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message({"--node-id", "a"}) == "--node-id needs --cluster-listen");
  CHECK(message({"--cluster-ca", "ca.pem"}) == "--cluster-ca needs --cluster-listen");
  CHECK(message({"--cluster-listen", "10.0.0.1:9443"}) ==
        "--cluster-listen needs --database postgresql://...: the nodes share their state there");
  CHECK(message({"--cluster-listen", "10.0.0.1:9443", "--database", pg}) ==
        "--cluster-listen needs --cluster-cert, --cluster-key and --cluster-ca (mutual TLS between nodes)");
  const std::vector<std::string> tls = {"--database", pg, "--cluster-cert", "c.pem", "--cluster-key", "k.pem",
                                        "--cluster-ca", "ca.pem"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), tls.begin(), tls.end());
    return more;
  };
  CHECK(message(with({"--cluster-listen", "10.0.0.1"})) == "--cluster-listen: expected HOST:PORT, got '10.0.0.1'");
  CHECK(message(with({"--cluster-listen", "10.0.0.1:9443", "--node-id", "a/b"})) ==
        "--node-id: expected 1 to 64 of [A-Za-z0-9._-], got 'a/b'");
  CHECK(message(with({"--cluster-listen", "10.0.0.1:9443", "--node-lease", "1"})) ==
        "--node-lease: expected an integer in [3, 3600], got '1'");
  auto c = load(with({"--cluster-listen", "10.0.0.1:9443", "--node-id", "cellgate-0"}));
  CHECK(c.clustered());
  CHECK(c.node_id == "cellgate-0");
  CHECK(c.cluster_advertise == "10.0.0.1:9443");
  CHECK(c.node_lease_s == 10);
  auto named = load(with({"--cluster-listen", "0.0.0.0:9443"}));
  CHECK_FALSE(named.node_id.empty());  // the host name
}

TEST_CASE("kernel caps: a served gateway has them unless told otherwise", "[gateway]") {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const int from_memory = std::max(16, static_cast<int>(static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / (128ull << 20)));
  auto c = load({});
  CHECK(c.max_kernels == from_memory);
  CHECK(c.max_kernels_per_user == 32);
  c = load({"--max-kernels", "0", "--max-kernels-per-user", "0"});
  CHECK(c.max_kernels == 0);
  CHECK(c.max_kernels_per_user == 0);
  c = load({"--max-kernels", "7"});
  CHECK(c.max_kernels == 7);
  CHECK(load({"--max-kernels", "auto"}).max_kernels == from_memory);
  CHECK_THROWS_AS(load({"--max-kernels", "lots"}), ConfigError);
}
