// SPDX-License-Identifier: BSD-3-Clause
// audit_log: one JSON line per record; the file is bounded (rotation into FILE.1 without renames).
#include "egress/audit_log.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace cellgate::egress;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("audit records are JSON lines and the file rotates at its bound", "[egress]") {
  char dir[] = "/tmp/egress-audit-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/audit.log";
  {
    auto log = AuditLog::open(path, 4096);
    REQUIRE(log);
    AuditRecord r;
    r.kernel = "k1";
    r.user = "alice";
    r.kind = "connect";
    r.host = "pypi.org";
    r.port = 443;
    r.reason = "bad \xff byte";  // invalid UTF-8 is replaced, never thrown
    for (int i = 0; i < 40; ++i) log->write(audit_json(r));
  }
  std::string current = slurp(path), previous = slurp(path + ".1");
  CHECK(current.size() <= 4096);
  CHECK(previous.size() <= 4096);
  CHECK_FALSE(previous.empty());
  std::istringstream lines(current);
  std::string line;
  REQUIRE(std::getline(lines, line));
  auto j = nlohmann::json::parse(line);
  CHECK(j["kernel"] == "k1");
  CHECK(j["decision"] == "refused");
  CHECK(j["host"] == "pypi.org");
  for (const char* f : {"time", "user", "kind", "port", "address", "reason", "bytes_out", "bytes_in", "requests", "duration_ms"}) {
    INFO(f);
    CHECK(j.contains(f));
  }
  ::unlink(path.c_str());
  ::unlink((path + ".1").c_str());
  ::rmdir(dir);
}
