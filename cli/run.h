// SPDX-License-Identifier: BSD-3-Clause
// run: `cellgate run NOTEBOOK.ipynb`, executing a notebook through a gateway like nbclient.
#pragma once

namespace cellgate::cli {

// argv after the subcommand. Exit codes: 0 every cell ran; 1 a cell failed or timed out (one line on
// stderr names the cell and the error; the notebook is still written with what ran); 2 the run could
// not start (usage, malformed notebook, unknown kernel, unreachable gateway), also one line.
int run_main(int argc, char** argv);

// The --help text.
const char* run_help();

}  // namespace cellgate::cli
