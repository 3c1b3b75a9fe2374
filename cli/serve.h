// SPDX-License-Identifier: BSD-3-Clause
// serve: `cellgate serve`: the gateway's services, the front end the config chooses (the Jupyter API,
// or notebook-http), and the listeners, until SIGINT or SIGTERM.
#pragma once

namespace cellgate::cli {

// argv after the subcommand. Throws common::ConfigError (one line, exit 2) for a configuration it
// cannot run; returns 1 when notebook-http's kernels cannot start, else 0 after a clean stop.
int serve_main(int argc, char** argv);

}  // namespace cellgate::cli
