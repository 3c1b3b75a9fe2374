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

// `cellgate-jail --egress-attach STATUS_FILE --egress SOCKET --name NAME`: hands the listener a
// running jail's init keeps (the status file's egress_fd) to a proxy that does not have it, e.g. one
// restarted after a crash. The jail is validated as for --join; the fd is taken with pidfd_getfd(2)
// and must be a listening TCP socket of the jail's own network namespace (SIOCGSKNS). Returns the
// exit code: 0, or 126 with `cellgate-jail: egress-attach: <why>` on stderr.
int reattach_egress(const std::string& status_file, const std::string& socket_path, const std::string& name);

}  // namespace cellgate::isolation
