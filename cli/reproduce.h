// SPDX-License-Identifier: BSD-3-Clause
// reproduce: `cellgate reproduce KERNEL_ID`, a kernel's journal re-run on a running gateway and
// compared cell by cell (POST /api/kernels/{id}/journal/reproduce).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace cellgate::cli {

// argv after the subcommand. Prints one line per re-run cell (seq, match, status) on stdout, and the
// first divergence's recorded and reproduced outputs; --json prints the gateway's answer as it is.
// Exit codes: 0 every compared cell matched; 1 a cell diverged; 2 the reproduction could not run
// (usage, unreachable gateway, the gateway's refusal), one line on stderr.
int reproduce_main(int argc, char** argv);

// The report as text (what reproduce_main prints without --json).
std::string reproduce_report_text(const nlohmann::json& report);

}  // namespace cellgate::cli
