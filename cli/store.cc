// SPDX-License-Identifier: BSD-3-Clause
// store: `cellgate fsck` and `cellgate gc`, the snapshot store's own commands.
#include "cli/store.h"

#include "cli/option_value.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <ostream>

#include <fmt/core.h>

#include "common/config_error.h"
#include "common/progress.h"
#include "workspace/fsck.h"
#include "workspace/gc.h"
#include "workspace/layout.h"
#include "workspace/object_store.h"
#include "workspace/volume.h"

namespace cellgate::cli {

std::string StoreArgs::store() const { return store_dir.empty() ? workspace::store_dir(data_dir) : store_dir; }

StoreArgs store_args(int argc, char** argv, bool gc) {
  StoreArgs out;
  out.data_dir = std::getenv("CELLGATE_DATA_DIR") ? std::getenv("CELLGATE_DATA_DIR") : "./data";
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    const bool data = a == "--data-dir" || a.rfind("--data-dir=", 0) == 0;
    const bool store = a == "--store-dir" || a.rfind("--store-dir=", 0) == 0;
    const bool age = gc && (a == "--min-age" || a.rfind("--min-age=", 0) == 0);
    if (age) {
      const std::string v = option_value(a, argc, argv, i);
      char* end = nullptr;
      errno = 0;
      const long long s = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || errno != 0 || s < 0)
        throw common::ConfigError("--min-age needs a number of seconds, not '" + v + "'");
      out.min_age_s = s;
      continue;
    }
    if (!data && !store)
      throw common::ConfigError("unexpected argument '" + a + "' (usage: [--data-dir DIR] [--store-dir DIR]" +
                                (gc ? " [--min-age SECONDS])" : ")"));
    (data ? out.data_dir : out.store_dir) = option_value(a, argc, argv, i);
  }
  return out;
}

int gc_main(const StoreArgs& args) {
  const std::string& data_dir = args.data_dir;
  auto store = workspace::ObjectStore::open(args.store());
  if (!store) {
    std::fprintf(stderr, "cellgate: cannot open the store %s: %s\n", args.store().c_str(), store.error().message.c_str());
    return 2;
  }
  auto volume = workspace::Volume::open_existing(data_dir);  // the manifests are in it
  if (!volume) {
    std::fprintf(stderr, "cellgate: %s\n", volume.error().message.c_str());
    return 2;
  }
  std::optional<common::TerminalProgress> meter(std::in_place, "gc");  // stderr, a terminal only
  // With --store-dir the store may be shared by cluster nodes: marked from every node's published
  // snapshots and pins, swept by age (docs/cluster.md §6).
  workspace::GcOptions options{data_dir, !args.store_dir.empty(), std::chrono::seconds(args.min_age_s)};
  auto r = workspace::collect_garbage(store.value(), options, meter->fn());
  meter.reset();
  if (*volume && (*volume)->mounted_here()) (*volume)->release();
  if (!r) {
    std::fprintf(stderr, "cellgate: gc failed: %s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("gc: %llu objects removed\n", static_cast<unsigned long long>(r->objects_removed));
  if (r->objects_young != 0)
    std::printf("gc: %llu unreferenced objects younger than %llds kept\n", static_cast<unsigned long long>(r->objects_young),
                static_cast<long long>(args.min_age_s));
  return 0;
}

int fsck_main(const StoreArgs& args, std::ostream& out) {
  const std::string& data_dir = args.data_dir;
  struct stat sb {};
  if (::stat(args.store().c_str(), &sb) != 0) {
    out << "fsck: no object store at " << args.store() << "\n";
    return 2;
  }
  auto store = workspace::ObjectStore::open(args.store());
  if (!store) {
    out << "fsck: " << store.error().message << "\n";
    return 2;
  }
  auto volume = workspace::Volume::open_existing(data_dir);  // the manifests are in it
  if (!volume) {
    out << "fsck: " << volume.error().message << "\n";
    return 2;
  }
  std::optional<common::TerminalProgress> meter(std::in_place, "fsck");  // stderr, a terminal only
  auto report = workspace::fsck(*store, data_dir, meter->fn());
  meter.reset();  // the line is erased before the results are printed
  if (*volume && (*volume)->mounted_here()) (*volume)->release();
  if (!report) {
    out << "fsck: " << report.error().message << "\n";
    return 2;
  }
  for (const auto& p : report->problems) out << "fsck: " << p << "\n";
  out << fmt::format("fsck: {} objects, {} manifests, {} problems\n", report->objects_checked,
                     report->manifests_checked, report->problems.size());
  return report->clean() ? 0 : 1;
}

}  // namespace cellgate::cli
