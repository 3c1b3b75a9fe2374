// SPDX-License-Identifier: BSD-3-Clause
// cellgate: the executable: one subcommand per entry point (serve, run, user, mcp, fsck, gc, restore,
// reproduce).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/mcp.h"
#include "cli/reproduce.h"
#include "cli/restore.h"
#include "cli/run.h"
#include "cli/serve.h"
#include "cli/store.h"
#include "cli/user.h"
#include "common/config_error.h"

namespace {

constexpr const char* kUsage =
    "usage: cellgate <command> [options]\n\n"
    "commands:\n"
    "  serve    run the gateway (cellgate serve --help)\n"
    "  run      execute a notebook and write its outputs: cellgate run NOTEBOOK.ipynb (--help)\n"
    "  user     manage users and their tokens (cellgate user --help)\n"
    "  mcp      an MCP server over stdio for a running gateway: cellgate mcp --url URL --token T\n"
    "  fsck     verify every snapshot object and manifest: cellgate fsck [--data-dir DIR]\n"
    "  gc       remove snapshot objects no snapshot or pin references: cellgate gc [--data-dir DIR]\n"
    "           [--store-dir DIR [--min-age SECONDS]] (a shared store: every node's snapshots are kept)\n"
    "  restore  put a workspace back to a snapshot: cellgate restore [--data-dir DIR] [--owner U] WS SNAPSHOT\n"
    "  reproduce  re-run a kernel's journal on a running gateway and compare: cellgate reproduce KERNEL_ID (--help)\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  try {
    if (command == "serve") return cellgate::cli::serve_main(argc - 2, argv + 2);
    if (command == "run") return cellgate::cli::run_main(argc - 2, argv + 2);
    if (command == "user") return cellgate::cli::user_main(argc - 2, argv + 2);
    if (command == "mcp") return cellgate::cli::mcp_main(argc - 2, argv + 2);
    if (command == "fsck") return cellgate::cli::fsck_main(cellgate::cli::store_args(argc - 2, argv + 2), std::cout);
    if (command == "gc") return cellgate::cli::gc_main(cellgate::cli::store_args(argc - 2, argv + 2, true));
    if (command == "restore") return cellgate::cli::restore_main(argc - 2, argv + 2);
    if (command == "reproduce") return cellgate::cli::reproduce_main(argc - 2, argv + 2);
  } catch (const cellgate::common::ConfigError& e) {
    std::fprintf(stderr, "cellgate: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "cellgate: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}
