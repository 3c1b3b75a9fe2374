// SPDX-License-Identifier: BSD-3-Clause
// etc_secrets: the host paths that hold secrets, which no bind may bring into a jail.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace cellgate::isolation {

// Host paths that hold secrets (password hashes, private keys, credentials) or identify the host.
// Whatever the policy or the command line says, no read-only bind, no rw bind and no /etc entry
// the jail adds by itself may be one of them, lie inside one, or contain one (e.g. "/etc/ssl",
// which holds "/etc/ssl/private", or "/"). The list is mechanism, not policy: tests pin it.
std::span<const std::string_view> secret_paths();

// The secret path that `path` (absolute, without "." or ".." components) is, lies inside or
// contains; empty when it overlaps none. Callers check the path as written and as resolved.
std::string_view overlapping_secret(std::string_view path);

}  // namespace cellgate::isolation
