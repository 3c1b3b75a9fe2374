// SPDX-License-Identifier: BSD-3-Clause
// sparse_file: files with holes stored as what they hold (their data extents), not as their size.
#include "workspace/sparse_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>

#include <fmt/core.h>

#include "workspace/io_util.h"
#include "workspace/safe_path.h"

namespace cellgate::workspace {
namespace {

using common::Errc;
using common::make_error;

constexpr std::string_view kMagic = "cellgate-sparse 1\n";
constexpr uint64_t kMinHoles = 64 << 10;
constexpr size_t kMaxExtents = 65536;
constexpr size_t kChunk = 1 << 20;
// magic + size + count + per extent two 20-digit numbers, a space and a newline
constexpr size_t kMaxHeader = 18 + 21 + 21 + kMaxExtents * 42;

common::Error bad(const std::string& why) { return make_error(Errc::kBadRequest, "malformed sparse object: " + why); }

}  // namespace

std::optional<SparseLayout> sparse_layout(int fd, const struct stat& st) {
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kMinHoles || uint64_t(st.st_blocks) * 512 + kMinHoles > size) return std::nullopt;
  SparseLayout layout;
  layout.size = size;
  uint64_t held = 0;
  for (off_t pos = 0; static_cast<uint64_t>(pos) < size;) {
    off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0) break;  // ENXIO: no data after pos (a trailing hole); others: treat as plain
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return std::nullopt;
    uint64_t end = std::min<uint64_t>(static_cast<uint64_t>(hole), size);
    if (end <= static_cast<uint64_t>(data)) break;
    if (layout.extents.size() == kMaxExtents) return std::nullopt;
    layout.extents.push_back(Extent{static_cast<uint64_t>(data), end - static_cast<uint64_t>(data)});
    held += end - static_cast<uint64_t>(data);
    pos = hole;
  }
  (void)::lseek(fd, 0, SEEK_SET);
  if (size - held < kMinHoles) return std::nullopt;
  return layout;
}

std::string sparse_header(const SparseLayout& layout) {
  std::string out(kMagic);
  out += fmt::format("{}\n{}\n", layout.size, layout.extents.size());
  for (const Extent& e : layout.extents) out += fmt::format("{} {}\n", e.offset, e.length);
  return out;
}

common::Result<uint64_t> read_extents(int fd, const SparseLayout& layout, const ChunkSink& sink) {
  auto buf = std::make_unique_for_overwrite<char[]>(kChunk);
  uint64_t total = 0;
  for (const Extent& e : layout.extents) {
    for (uint64_t done = 0; done < e.length;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, e.length - done));
      ssize_t n = ::pread(fd, buf.get(), want, static_cast<off_t>(e.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno_error("read", errno);
      if (n == 0) return make_error(Errc::kInternal, "file changed while it was stored (it shrank)");
      if (auto st = sink(std::string_view(buf.get(), static_cast<size_t>(n))); !st) return st.error();
      done += static_cast<uint64_t>(n);
      total += static_cast<uint64_t>(n);
    }
  }
  return total;
}

common::Result<SparseLayout> read_sparse_header(int object_fd) {
  // Read a prefix big enough for the largest header, then parse line by line.
  std::string text;
  char buf[65536];
  size_t header_end = 0;
  SparseLayout layout;
  size_t lines_needed = 3;  // magic, size, count; then one per extent
  size_t line = 0, pos = 0;
  uint64_t count = 0;
  for (;;) {
    size_t nl;
    while ((nl = text.find('\n', pos)) != std::string::npos && line < lines_needed) {
      std::string_view l(text.data() + pos, nl - pos);
      auto num = [](std::string_view s, uint64_t& out) {
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        return !s.empty() && ec == std::errc() && p == s.data() + s.size();
      };
      if (line == 0 && std::string(l) + "\n" != kMagic) return bad("magic");
      if (line == 1 && !num(l, layout.size)) return bad("size");
      if (line == 2) {
        if (!num(l, count) || count > kMaxExtents) return bad("extent count");
        lines_needed = 3 + count;
        layout.extents.reserve(count);
      }
      if (line >= 3) {
        size_t sp = l.find(' ');
        Extent e;
        if (sp == std::string_view::npos || !num(l.substr(0, sp), e.offset) || !num(l.substr(sp + 1), e.length) ||
            e.length == 0 || e.offset > layout.size || e.length > layout.size - e.offset ||
            (!layout.extents.empty() && e.offset < layout.extents.back().offset + layout.extents.back().length))
          return bad("extent");
        layout.extents.push_back(e);
      }
      ++line;
      pos = nl + 1;
    }
    if (line == lines_needed) {
      header_end = pos;
      break;
    }
    if (text.size() > kMaxHeader) return bad("header too long");
    auto n = read_some(object_fd, buf, sizeof buf);
    if (!n) return n.error();
    if (*n == 0) return bad("truncated header");
    text.append(buf, *n);
  }
  if (::lseek(object_fd, static_cast<off_t>(header_end), SEEK_SET) < 0) return errno_error("seek", errno);
  return layout;
}

common::Status write_sparse(int object_fd, const SparseLayout& layout, int out) {
  auto buf = std::make_unique_for_overwrite<char[]>(kChunk);
  for (const Extent& e : layout.extents) {
    for (uint64_t done = 0; done < e.length;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, e.length - done));
      auto n = read_some(object_fd, buf.get(), want);
      if (!n) return n.error();
      if (*n == 0) return bad("truncated data");
      for (size_t off = 0; off < *n;) {
        ssize_t w = ::pwrite(out, buf.get() + off, *n - off, static_cast<off_t>(e.offset + done + off));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno_error("write", errno);
        off += static_cast<size_t>(w);
      }
      done += *n;
    }
  }
  if (::ftruncate(out, static_cast<off_t>(layout.size)) != 0) return errno_error("truncate", errno);
  return common::ok();
}

}  // namespace cellgate::workspace
