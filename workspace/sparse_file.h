// SPDX-License-Identifier: BSD-3-Clause
// sparse_file: files with holes stored as what they hold (their data extents), not as their size.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace cellgate::workspace {

// A 1 GiB file with one byte written holds one block: read as a stream it is 1 GiB of zeros to
// hash (seconds) and to store. Such a file is stored as a "sparse object" instead:
//
//   cellgate-sparse 1\n<size>\n<extent count>\n(<offset> <length>\n)*  then the extents' bytes
//
// found with lseek(SEEK_DATA/SEEK_HOLE) (lseek(2)). Its hash is that object's SHA-256, like any
// object's; the manifest marks the entry sparse, so restore writes the extents at their offsets
// and the file gets its holes back. Files without holes (most) keep the plain form.
struct Extent {
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct SparseLayout {
  uint64_t size = 0;            // the file's length
  std::vector<Extent> extents;  // data, in order, not overlapping, within size
};

// The layout of fd when storing it sparse is worth it: it holds fewer blocks than its size
// (st_blocks), at least 64 KiB of holes, and at most 65,536 extents. nullopt otherwise (store the
// plain bytes). Data written meanwhile may be missed, as a plain read would miss it.
std::optional<SparseLayout> sparse_layout(int fd, const struct stat& st);

// The header of a sparse object for layout (the extents' bytes follow it).
std::string sparse_header(const SparseLayout& layout);

// Reads the extents' bytes of fd in order, in chunks, into sink; stops early (kInternal "changed")
// when the file shrank meanwhile. Returns the bytes read.
using ChunkSink = std::function<common::Status(std::string_view)>;
common::Result<uint64_t> read_extents(int fd, const SparseLayout& layout, const ChunkSink& sink);

// Reads a sparse object's header from the start of object_fd (bounded: ≤ 65,536 extents), leaving
// the offset at the first data byte. kBadRequest when malformed.
common::Result<SparseLayout> read_sparse_header(int object_fd);

// Writes a sparse object's content into out: each extent at its offset, then the length (holes
// stay holes). The object's offset must be at its first data byte (read_sparse_header).
common::Status write_sparse(int object_fd, const SparseLayout& layout, int out);

}  // namespace cellgate::workspace
