// SPDX-License-Identifier: BSD-3-Clause
// child_error: decoding the child's fixed-size records into stage names and messages.
#include "isolation/child_error.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>

using namespace cellgate::isolation;
using cellgate::isolation::child::ChildReport;
using cellgate::isolation::child::ReportKind;
using cellgate::isolation::child::Stage;

TEST_CASE("stage names are the documented snake_case words", "[isolation]") {
  CHECK(stage_name(static_cast<uint32_t>(Stage::kPivotRoot)) == "pivot_root");
  CHECK(stage_name(static_cast<uint32_t>(Stage::kSeccomp)) == "seccomp");
  CHECK(stage_name(static_cast<uint32_t>(Stage::kExec)) == "exec");
  CHECK(stage_name(static_cast<uint32_t>(Stage::kInit)) == "init");
  CHECK(stage_name(9999) == "unknown");
}

TEST_CASE("records decode only with the exact size and a known kind", "[isolation]") {
  ChildReport r{static_cast<uint32_t>(ReportKind::kError), static_cast<uint32_t>(Stage::kPivotRoot), ENOENT, 0};
  char bytes[sizeof r];
  std::memcpy(bytes, &r, sizeof r);
  auto d = decode_report(bytes, sizeof bytes);
  REQUIRE(d);
  CHECK(d->err == ENOENT);
  CHECK_FALSE(decode_report(bytes, sizeof bytes - 1));
  r.kind = 77;
  std::memcpy(bytes, &r, sizeof r);
  CHECK_FALSE(decode_report(bytes, sizeof bytes));
}

TEST_CASE("failures become `<stage>: <strerror>` messages", "[isolation]") {
  ChildReport r{static_cast<uint32_t>(ReportKind::kError), static_cast<uint32_t>(Stage::kPivotRoot), ENOENT, 0};
  auto f = describe_failure(r, "");
  CHECK(f.stage == "pivot_root");
  CHECK(f.err == ENOENT);
  CHECK(f.message == std::string("pivot_root: ") + std::strerror(ENOENT));
  r.stage = static_cast<uint32_t>(Stage::kMount);
  CHECK(describe_failure(r, "/workspace").message == std::string("mount /workspace: ") + std::strerror(ENOENT));
}
