// SPDX-License-Identifier: BSD-3-Clause
// egress_attach: the helper's half of handing a jail's proxy endpoint to cellgate-egress.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace cellgate::isolation {

// Connects to the egress proxy's control socket, announces {"op":"attach","kernel":NAME} and waits
// for {"ok":true} (the proxy holds a policy for NAME). The connection is then the child's: its init
// sends the listening socket over it (child::apply_egress_listener). Errors: one line, e.g.
// "egress: unknown kernel k1" or "egress: connect /run/cellgate/egress.sock: No such file or directory".
common::Result<common::UniqueFd> announce_to_egress(const std::string& socket_path, const std::string& name,
                                                    std::chrono::milliseconds timeout);

}  // namespace cellgate::isolation
