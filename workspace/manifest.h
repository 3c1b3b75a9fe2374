// SPDX-License-Identifier: BSD-3-Clause
// manifest: one snapshot's tree listing, its byte-safe text encoding, and diffs between listings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace cellgate::workspace {

enum class EntryType : char { kDir = 'd', kFile = 'f', kSymlink = 'l' };

// One tree entry. path is relative ("a/b"), any bytes but NUL and '/' in a name.
struct Entry {
  std::string path;
  EntryType type = EntryType::kFile;
  uint32_t mode = 0;  // permission bits (07777 & st_mode)
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t mtime_ns = 0;
  uint64_t size = 0;        // files only
  std::string hash;         // files only: SHA-256 hex of the content (of its sparse object when sparse)
  bool sparse = false;      // files only: stored as its data extents (sparse_file.h)
  std::string link_target;  // symlinks only, never interpreted
};

struct Manifest {
  std::string id;
  int64_t created_ns = 0;
  bool automatic = false;
  std::string label;           // non-empty = labelled (kept by retention)
  std::vector<Entry> entries;  // sorted by path (bytewise), unique
  // Filled by parse (from the header) and by serialize (from entries).
  uint64_t entry_count = 0;
  uint64_t total_bytes = 0;
};

// Text format, one record per line; every variable field is %XX-escaped (bytes <= 0x20,
// >= 0x7f and '%'), so any byte in a name survives; a final "checksum <sha256>" line seals it.
std::string serialize_manifest(const Manifest& m);
// Strict parse: kBadRequest on any malformation, a bad checksum, unsorted or invalid paths.
common::Result<Manifest> parse_manifest(std::string_view text);
// Only the header fields (id, created, kind, label, counts) of a manifest prefix; no checksum
// check (fsck does that). For cheap listings.
common::Result<Manifest> parse_manifest_header(std::string_view prefix);

std::string escape_field(std::string_view raw);
common::Result<std::string> unescape_field(std::string_view escaped);

// Paths that differ from `from` to `to`. "changed" = type, content, link target or mode differ
// (mtime and ownership alone do not count). Each list is sorted.
struct Diff {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::vector<std::string> changed;
  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
};
Diff diff_entries(const std::vector<Entry>& from, const std::vector<Entry>& to);
bool same_content(const Entry& a, const Entry& b);

}  // namespace cellgate::workspace
