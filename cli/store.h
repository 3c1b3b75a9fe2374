// SPDX-License-Identifier: BSD-3-Clause
// store: `cellgate fsck` and `cellgate gc`, the snapshot store's own commands.
#pragma once

#include <iosfwd>
#include <string>

namespace cellgate::cli {

// The data dir of `cellgate fsck|gc [--data-dir DIR]` (argv after the subcommand): DIR, else
// $CELLGATE_DATA_DIR, else ./data. Throws common::ConfigError for any other argument.
std::string data_dir_arg(int argc, char** argv);

// Verifies every object (rehash) and manifest; prints a summary and each problem to out. 0 clean,
// 1 damaged, 2 when the store cannot be opened or read. Objects checked are shown on stderr while it
// runs, when stderr is a terminal (gc's progress too).
int fsck_main(const std::string& data_dir, std::ostream& out);

// Removes the objects no snapshot references; prints how many. 0 done, 1 gc failed, 2 no store.
int gc_main(const std::string& data_dir);

}  // namespace cellgate::cli
