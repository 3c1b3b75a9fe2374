// SPDX-License-Identifier: BSD-3-Clause
// restore: `cellgate restore`, a workspace put back to one of its snapshots from the data dir.
#include "cli/restore.h"

#include "cli/option_value.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "workspace/layout.h"
#include "workspace/workspace_manager.h"

namespace cellgate::cli {

using namespace workspace;  // the workspace manager and its layout

namespace {

constexpr const char* kUsage = "usage: cellgate restore [--data-dir DIR] [--store-dir DIR] [--owner USER] WORKSPACE SNAPSHOT\n";

int usage_error(const std::string& what) {
  std::fprintf(stderr, "cellgate restore: %s\n%s", what.c_str(), kUsage);
  return 2;
}

}  // namespace

int restore_main(int argc, char** argv) {
  const char* env_dir = std::getenv("CELLGATE_DATA_DIR");
  std::string data_dir = env_dir ? env_dir : "./data";
  std::string owner = "default";  // the implicit user of a gateway without users
  WorkspaceConfig config;         // the store: --store-dir's (as `serve` was given), else the data dir's
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    const std::string flag = a.substr(0, a.find('='));
    if (flag == "--data-dir" || flag == "--owner" || flag == "--store-dir") {
      if (a == flag && i + 1 >= argc) return usage_error(flag + " needs a value");
      (flag == "--data-dir" ? data_dir : flag == "--owner" ? owner : config.store_dir) = option_value(a, argc, argv, i);
    } else if (a.rfind("--", 0) == 0) {
      return usage_error("unknown option " + a);
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 2) return usage_error("expected a workspace and a snapshot");
  struct stat sb {};
  const std::string store = config.store_dir.empty() ? store_dir(data_dir) : config.store_dir;
  if (::stat(store.c_str(), &sb) != 0) return usage_error("no object store at " + store);
  auto mgr = WorkspaceManager::open(data_dir, config);  // would create a missing one
  if (!mgr) return usage_error("cannot open " + data_dir + ": " + mgr.error().message);
  auto ws = (*mgr)->open(WorkspaceRef{owner, args[0]});
  if (!ws) return usage_error(owner + "/" + args[0] + ": " + ws.error().message);

  std::optional<common::TerminalProgress> meter(std::in_place, "restore");  // stderr, a terminal only
  auto r = ws->restore(args[1], meter->fn());
  meter.reset();
  // A workspace volume this command mounted goes again (the gateway's own mount stays).
  if (Volume* v = (*mgr)->volume(); v != nullptr && v->mounted_here()) v->release();
  if (!r) {
    const bool not_found = r.error().code == common::Errc::kNotFound;
    std::fprintf(stderr, "cellgate restore: %s/%s to %s: %s\n", owner.c_str(), args[0].c_str(), args[1].c_str(),
                 r.error().message.c_str());
    return not_found ? 2 : 1;
  }
  std::printf("restore: %s/%s is snapshot %s: %llu files written, %zu added, %zu changed, %zu removed\n",
              owner.c_str(), args[0].c_str(), args[1].c_str(), static_cast<unsigned long long>(r->files_written),
              r->applied.added.size(), r->applied.changed.size(), r->applied.removed.size());
  return 0;
}

}  // namespace cellgate::cli
