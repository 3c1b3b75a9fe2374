// SPDX-License-Identifier: BSD-3-Clause
// restore: `cellgate restore`, a workspace put back to one of its snapshots from the data dir.
#pragma once

namespace cellgate::cli {

// `cellgate restore [--data-dir DIR] [--owner USER] WORKSPACE SNAPSHOT`: restores in place, under
// the workspace's and the store's locks (the gateway's own snapshots and restores wait, and
// running kernels keep their memory, as with the REST route). Entries placed are shown on stderr
// while it runs, when stderr is a terminal. Prints one line; returns 0 restored, 1 the restore
// failed, 2 bad arguments or no such workspace or snapshot.
int restore_main(int argc, char** argv);

}  // namespace cellgate::cli
