// SPDX-License-Identifier: BSD-3-Clause
// usr_etc_links: the /etc entries that symlinks under /usr lead to, which the jail binds so that
// the /usr it shows is whole (Debian links a package's configuration there:
// /usr/lib/R/etc/Renviron -> /etc/R/Renviron, /usr/share/octave/site/m/startup/octaverc -> /etc/octaverc).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cellgate::isolation {

struct UsrLinkScan {
  std::vector<std::string> targets;  // sorted, unique, normalised paths below /etc
  bool truncated = false;            // the walk stopped at its entry bound
};

// Walks `root` without following symlinks and collects where its symlinks lead below /etc
// (absolute targets, and relative ones resolved against the link's dir; both normalised
// lexically). A directory that is not root's, or that group or others may write, is not entered:
// only root's own tree vouches for a link. At most `max_entries` entries are visited.
UsrLinkScan scan_usr_links(const std::string& root, size_t max_entries);

// What to bind for `targets`: each target's top-level /etc entry (/etc/R for /etc/R/Renviron),
// or the target itself when that entry holds a secret (/etc/ssl/certs, never /etc/ssl); targets
// that are or hold a secret, the files the jail generates, and whatever `explicit_binds` already
// cover are left out. Sorted, unique.
std::vector<std::string> etc_binds_for_links(const std::vector<std::string>& targets,
                                             const std::vector<std::string>& explicit_binds);

// scan_usr_links("/usr"), cached as `cache_dir`/usr-etc-links under a fingerprint of what
// changes the links: dpkg's status file and alternatives dir, and the /usr and /usr/local dirs.
// Installing or removing a package makes the next jail scan again (about 0.5 s for 200,000 entries).
std::vector<std::string> usr_etc_link_targets(const std::string& cache_dir);

}  // namespace cellgate::isolation
