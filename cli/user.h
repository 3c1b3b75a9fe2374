// SPDX-License-Identifier: BSD-3-Clause
// user: `cellgate user add|list|remove|reset-token|set-limits`, the admin's way to manage users.
#pragma once

namespace cellgate::cli {

// argv[0] is the word after `user` (the subcommand). Exit codes: 0 done, 1 the operation failed (no
// such user, name taken, database error), 2 usage or configuration error. Tokens go to stdout alone
// on a line; everything else to stderr, one line per error. Never throws.
int user_main(int argc, char** argv);

}  // namespace cellgate::cli
