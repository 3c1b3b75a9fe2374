// SPDX-License-Identifier: BSD-3-Clause
// mcp: `cellgate mcp`, an MCP server over stdio for a running gateway.
#pragma once

namespace cellgate::cli {

// `cellgate mcp --url URL --token T`: argv after the subcommand. URL and token may also come from
// CELLGATE_URL and CELLGATE_TOKEN (which keeps the token out of `ps`). Logs go to stderr only: stdout
// belongs to the protocol. Returns the process exit code (2 on bad usage).
int mcp_main(int argc, char** argv);

}  // namespace cellgate::cli
