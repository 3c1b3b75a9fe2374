// SPDX-License-Identifier: BSD-3-Clause
// pool_claim: a kernelspec's claim code (metadata.cellgate.claim) and its checks.
#include "gateway/pool_claim.h"

#include <catch2/catch.hpp>

using cellgate::gateway::claim_cell;
using cellgate::gateway::claim_code_for;
using cellgate::launcher::KernelSpec;

namespace {
KernelSpec spec(const char* language, nlohmann::json cellgate = nullptr) {
  KernelSpec s;
  s.name.assign(1, 'k');  // not = "k": GCC 12's -Wrestrict misfires on that inlined assignment
  s.language.assign(language);
  if (!cellgate.is_null()) s.metadata = {{"cellgate", cellgate}};
  return s;
}
}  // namespace

TEST_CASE("Python kernelspecs have a built-in claim and warm-up", "[pool_claim]") {
  auto code = claim_code_for(spec("python"));
  REQUIRE(code);
  CHECK(code->warmup == "pass");
  auto cell = claim_cell(*code, {{"KERNEL_X", "a\"b'$(c)"}});
  CHECK(cell.find("chdir('/workspace')") != std::string::npos);
  CHECK(cell.find(R"x(loads("{\"KERNEL_X\":\"a\\\"b'$(c)\"}"))x") != std::string::npos);
}

TEST_CASE("another language pools only with claim code of its own", "[pool_claim]") {
  auto none = claim_code_for(spec("R"));
  REQUIRE(!none);
  CHECK(none.error().message.find("kernelspec k (R) declares no metadata.cellgate.claim") == 0);
  auto r = claim_code_for(spec("R", {{"claim", "Sys.setenv(x = {env}); setwd('/workspace')"}}));
  REQUIRE(r);
  CHECK(r->warmup.empty());
  CHECK(claim_cell(*r, {}) == "Sys.setenv(x = \"{}\"); setwd('/workspace')");
  auto bash = claim_code_for(spec("bash", {{"claim", "ENV={env}; cd /workspace"}, {"warmup", "true"}}));
  REQUIRE(bash);
  CHECK(claim_cell(*bash, {{"KERNEL_A", "it's $(x)"}}) == R"x(ENV='{"KERNEL_A":"it'\''s $(x)"}'; cd /workspace)x");
}

TEST_CASE("bad claim code is refused with the kernelspec and the key", "[pool_claim]") {
  CHECK(claim_code_for(spec("R", {{"claim", 1}})).error().message == "kernelspec k: metadata.cellgate.claim must be a string of code");
  CHECK(claim_code_for(spec("R", {{"claim", "x"}, {"warmup", true}})).error().message ==
        "kernelspec k: metadata.cellgate.warmup must be a string of code");
  CHECK(claim_code_for(spec("R", {{"claim", "setwd('/workspace')"}})).error().message ==
        "kernelspec k: metadata.cellgate.claim must hold {env} exactly once");
  CHECK(claim_code_for(spec("R", {{"claim", "{env}{env}"}})).error().message ==
        "kernelspec k: metadata.cellgate.claim must hold {env} exactly once");
  CHECK(claim_code_for(spec("julia", {{"claim", "{env}"}})).error().message ==
        "kernelspec k: cellgate has no checked string literal for julia, so it cannot pass {env} to its claim");
}
