// SPDX-License-Identifier: BSD-3-Clause
// attach_workspace: `cellgate-jail --attach-workspace STATUS_FILE --workspace DIR`.
#pragma once

#include <string>

namespace cellgate::isolation {

// runs in: the helper's only thread (setns(CLONE_NEWNS) refuses multi-threaded callers). Mounts the
// host dir `workspace` at /workspace inside the running jail that status_file describes, idmapped
// like the jail's own workspace. Returns 0, or 126 with `cellgate-jail: <message>` on stderr.
int attach_workspace(const std::string& status_file, const std::string& workspace);

}  // namespace cellgate::isolation
