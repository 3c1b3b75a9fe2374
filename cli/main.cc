// SPDX-License-Identifier: BSD-3-Clause
// cellgate: the executable: one subcommand per entry point (serve, run, user, mcp, fsck, gc).
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "cli/run.h"
#include "cli/serve.h"
#include "common/config_error.h"
#include "common/progress.h"
#include "mcp/stdio_transport.h"
#include "state/user_cli.h"
#include "workspace/fsck.h"
#include "workspace/gc.h"
#include "workspace/layout.h"
#include "workspace/object_store.h"
#include "workspace/restore_command.h"

namespace {

constexpr const char* kUsage =
    "usage: cellgate <command> [options]\n\n"
    "commands:\n"
    "  serve    run the gateway (cellgate serve --help)\n"
    "  run      execute a notebook and write its outputs: cellgate run NOTEBOOK.ipynb (--help)\n"
    "  user     manage users and their tokens (cellgate user --help)\n"
    "  mcp      an MCP server over stdio for a running gateway: cellgate mcp --url URL --token T\n"
    "  fsck     verify every snapshot object and manifest: cellgate fsck [--data-dir DIR]\n"
    "  gc       remove snapshot objects no snapshot references: cellgate gc [--data-dir DIR]\n"
    "  restore  put a workspace back to a snapshot: cellgate restore [--data-dir DIR] [--owner U] WS SNAPSHOT\n";

// `cellgate fsck|gc [--data-dir DIR]`: DIR defaults to $CELLGATE_DATA_DIR, then ./data.
std::string data_dir_arg(int argc, char** argv) {
  std::string dir = std::getenv("CELLGATE_DATA_DIR") ? std::getenv("CELLGATE_DATA_DIR") : "./data";
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data-dir" && i + 1 < argc) dir = argv[++i];
    else if (a.rfind("--data-dir=", 0) == 0) dir = a.substr(11);
    else throw cellgate::common::ConfigError("unexpected argument '" + a + "' (usage: --data-dir DIR)");
  }
  return dir;
}

int gc_main(const std::string& data_dir) {
  auto store = cellgate::workspace::ObjectStore::open(cellgate::workspace::store_dir(data_dir));
  if (!store) {
    std::fprintf(stderr, "cellgate: cannot open the store in %s: %s\n", data_dir.c_str(), store.error().message.c_str());
    return 2;
  }
  std::optional<cellgate::common::TerminalProgress> meter(std::in_place, "gc");  // stderr, a terminal only
  auto r = cellgate::workspace::collect_garbage(store.value(), data_dir, meter->fn());
  meter.reset();
  if (!r) {
    std::fprintf(stderr, "cellgate: gc failed: %s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("gc: %llu objects removed\n", static_cast<unsigned long long>(r->objects_removed));
  return 0;
}

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
    if (command == "user") return cellgate::state::user_main(argc - 2, argv + 2);
    if (command == "mcp") return cellgate::mcp::mcp_main(argc - 2, argv + 2);
    if (command == "fsck") return cellgate::workspace::fsck_main(data_dir_arg(argc - 2, argv + 2), std::cout);
    if (command == "gc") return gc_main(data_dir_arg(argc - 2, argv + 2));
    if (command == "restore") return cellgate::workspace::restore_main(argc - 2, argv + 2);
  } catch (const cellgate::common::ConfigError& e) {
    std::fprintf(stderr, "cellgate: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "cellgate: unknown command '%s'\n%s", command.c_str(), kUsage);
  return 2;
}
