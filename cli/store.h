// SPDX-License-Identifier: BSD-3-Clause
// store: `cellgate fsck` and `cellgate gc`, the snapshot store's own commands.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace cellgate::cli {

// `cellgate fsck|gc [--data-dir DIR] [--store-dir DIR]` (argv after the subcommand), and gc's
// `--min-age SECONDS`: the data dir is DIR, else $CELLGATE_DATA_DIR, else ./data; the store is
// --store-dir's (as `serve` was given), else the data dir's.
struct StoreArgs {
  std::string data_dir;   // --data-dir, $CELLGATE_DATA_DIR, or ./data
  std::string store_dir;  // --store-dir; "" = <data_dir>/store
  int64_t min_age_s = 3600;  // gc on a shared store (--store-dir): unmarked objects younger than this stay
  std::string store() const;
};
// Throws ConfigError (one line) on anything else. gc: whether --min-age is accepted.
StoreArgs store_args(int argc, char** argv, bool gc = false);

// Verifies every object (rehash) and manifest; prints a summary and each problem to out. 0 clean,
// 1 damaged, 2 when the store cannot be opened or read. Objects checked are shown on stderr while it
// runs, when stderr is a terminal (gc's progress too).
int fsck_main(const StoreArgs& args, std::ostream& out);

// Removes the objects no snapshot or pin references; prints how many. With --store-dir the store may be
// shared by cluster nodes: every node's published snapshots and the pins beside the store are marked,
// and only objects older than --min-age go (workspace/gc.h). 0 done, 1 gc failed, 2 no store.
int gc_main(const StoreArgs& args);

}  // namespace cellgate::cli
