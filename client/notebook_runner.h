// SPDX-License-Identifier: BSD-3-Clause
// notebook_runner: executes a notebook's code cells in order on a kernel of a gateway, as a real client
// (REST to start, upload to and delete the kernel; the kernel WebSocket to execute), and writes the
// outputs into the notebook the way nbclient does. The engine of `cellgate run`.
#pragma once

#include <functional>
#include <string>

#include "client/http_client.h"
#include "common/progress.h"
#include "common/result.h"
#include "kernel-launcher/notebook_file.h"

namespace cellgate::client {

struct RunOptions {
  std::string kernel;          // "" = the notebook's metadata.kernelspec.name, else the gateway's default
  std::string workspace;       // "" = an ephemeral workspace, deleted with the kernel
  std::string notebook_dir;    // metadata.cellgate.files are read relative to it
  bool allow_errors = false;   // like nbclient's allow_errors: record the error and go on
  int cell_timeout_s = 600;    // per cell; on expiry the kernel is interrupted and the run fails
  int start_timeout_s = 120;   // kernel start and kernel_info
  std::function<bool()> cancelled;  // checked after the kernel starts and before each cell
  common::ProgressFn progress;      // "cells" done of total, before each cell and after the last
};

struct RunReport {
  bool ok = true;
  std::string failure;         // one line: which cell failed and why (empty when ok)
  int cells_run = 0;
  std::string kernel_name;     // as the gateway started it
};

// Files named in metadata.cellgate.files (relative paths, no "..") that are uploaded into the kernel's
// workspace before the first cell. Bounded: 64 files, 64 MiB each. Errors name the file.
common::Result<std::vector<std::pair<std::string, std::string>>> read_notebook_files(const launcher::Notebook& nb,
                                                                                  const std::string& notebook_dir);

// Runs nb on the gateway at url. Outputs, execution counts, metadata.language_info and each executed
// cell's metadata.cellgate (the workspace snapshot its execute_reply reported) are written into nb,
// also when a cell fails (the report says which). An Error means the run could not start or the
// gateway failed (unreachable, unknown kernel, malformed reply): nothing ran to a verdict.
common::Result<RunReport> run_notebook(launcher::Notebook& nb, const BaseUrl& url, const std::string& token,
                                       const RunOptions& options);

}  // namespace cellgate::client
