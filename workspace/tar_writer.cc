// SPDX-License-Identifier: BSD-3-Clause
// tar_writer: a snapshot as a POSIX pax/ustar archive, streamed from the object store.
#include "workspace/tar_writer.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include <fmt/core.h>

#include "workspace/io_util.h"
#include "workspace/sparse_file.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;

namespace {

constexpr size_t kBlock = 512;
constexpr uint64_t kMaxUstarSize = 077777777777ULL;  // 11 octal digits
constexpr uint32_t kMaxUstarId = 07777777;

struct Header {
  char b[kBlock];
};

void put_str(char* field, size_t width, std::string_view s) {
  std::memcpy(field, s.data(), std::min(width, s.size()));
}

void put_octal(char* field, size_t width, uint64_t value) {
  // width-1 zero-padded octal digits and a NUL, as POSIX ustar expects.
  std::string s = fmt::format("{:0{}o}", value, width - 1);
  std::memcpy(field, s.data(), width - 1);
  field[width - 1] = '\0';
}

Header make_header(std::string_view name, char type, uint32_t mode, uint32_t uid, uint32_t gid,
                   uint64_t size, int64_t mtime_s, std::string_view linkname) {
  Header h{};
  put_str(h.b + 0, 100, name);
  put_octal(h.b + 100, 8, mode & 07777);
  put_octal(h.b + 108, 8, std::min(uid, kMaxUstarId));
  put_octal(h.b + 116, 8, std::min(gid, kMaxUstarId));
  put_octal(h.b + 124, 12, std::min(size, kMaxUstarSize));
  put_octal(h.b + 136, 12, static_cast<uint64_t>(std::max<int64_t>(mtime_s, 0)) & 077777777777ULL);
  h.b[156] = type;
  put_str(h.b + 157, 100, linkname);
  std::memcpy(h.b + 257, "ustar", 6);  // magic "ustar\0"
  std::memcpy(h.b + 263, "00", 2);
  // Checksum: sum of all header bytes with the checksum field read as spaces.
  std::memset(h.b + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h.b) sum += c;
  std::string s = fmt::format("{:06o}", sum);
  std::memcpy(h.b + 148, s.data(), 6);
  h.b[154] = '\0';
  h.b[155] = ' ';
  return h;
}

void add_record(std::string& out, std::string_view key, std::string_view value) {
  // "%d %s=%s\n" where the length counts itself (POSIX pax): find the fixed point.
  size_t body = 1 + key.size() + 1 + value.size() + 1;
  size_t len = body + 1;
  while (fmt::formatted_size("{}", len) + body != len) len = fmt::formatted_size("{}", len) + body;
  out += fmt::format("{} {}={}\n", len, key, value);
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : SIZE_MAX;
    if (n == SIZE_MAX || i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n + 1;
  }
  return true;
}

common::Status pad(const TarSink& sink, uint64_t size) {
  static const char zeros[kBlock] = {};
  size_t rem = size % kBlock;
  return rem == 0 ? common::ok() : sink(std::string_view(zeros, kBlock - rem));
}

// A tar member holds every byte: a sparse object's holes become zeros (each bounded by the sink).
common::Status emit_sparse(int object_fd, uint64_t size, const TarSink& sink, char* buf, size_t buf_size) {
  auto layout = read_sparse_header(object_fd);
  if (!layout) return layout.error();
  if (layout->size != size) return make_error(Errc::kInternal, "sparse object does not match its manifest entry");
  uint64_t at = 0;
  auto zeros = [&](uint64_t n) -> common::Status {
    std::memset(buf, 0, std::min<uint64_t>(n, buf_size));
    for (uint64_t left = n; left > 0;) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(left, buf_size));
      if (auto st = sink(std::string_view(buf, k)); !st) return st;
      left -= k;
    }
    return common::ok();
  };
  for (const Extent& x : layout->extents) {
    if (auto st = zeros(x.offset - at); !st) return st;
    for (uint64_t done = 0; done < x.length;) {
      auto n = read_some(object_fd, buf, static_cast<size_t>(std::min<uint64_t>(buf_size, x.length - done)));
      if (!n) return n.error();
      if (*n == 0) return make_error(Errc::kInternal, "sparse object shorter than its header");
      if (auto st = sink(std::string_view(buf, *n)); !st) return st;
      done += *n;
    }
    at = x.offset + x.length;
  }
  if (auto st = zeros(size - at); !st) return st;
  return pad(sink, size);
}

common::Status emit_entry(const ObjectStore& store, const Entry& e, const TarSink& sink, char* buf,
                          size_t buf_size) {
  std::string name = e.type == EntryType::kDir ? e.path + "/" : e.path;
  std::string pax;
  if (name.size() > 100) add_record(pax, "path", name);
  if (e.link_target.size() > 100) add_record(pax, "linkpath", e.link_target);
  if (e.size > kMaxUstarSize) add_record(pax, "size", std::to_string(e.size));
  if (e.uid > kMaxUstarId) add_record(pax, "uid", std::to_string(e.uid));
  if (e.gid > kMaxUstarId) add_record(pax, "gid", std::to_string(e.gid));
  if (!pax.empty() && (!valid_utf8(name) || !valid_utf8(e.link_target))) {
    std::string with_charset;
    add_record(with_charset, "hdrcharset", "BINARY");
    pax = with_charset + pax;
  }
  int64_t mtime_s = e.mtime_ns / 1'000'000'000;
  if (!pax.empty()) {
    Header x = make_header("PaxHeaders/entry", 'x', 0644, 0, 0, pax.size(), mtime_s, "");
    if (auto st = sink(std::string_view(x.b, kBlock)); !st) return st;
    if (auto st = sink(pax); !st) return st;
    if (auto st = pad(sink, pax.size()); !st) return st;
  }
  char type = e.type == EntryType::kDir ? '5' : e.type == EntryType::kSymlink ? '2' : '0';
  uint64_t size = e.type == EntryType::kFile ? e.size : 0;
  Header h = make_header(name, type, e.mode, e.uid, e.gid, size, mtime_s, e.link_target);
  if (auto st = sink(std::string_view(h.b, kBlock)); !st) return st;
  if (e.type != EntryType::kFile) return common::ok();
  auto fd = store.open_object(e.hash);
  if (!fd) return fd.error();
  if (e.sparse) return emit_sparse(fd->get(), size, sink, buf, buf_size);
  uint64_t written = 0;
  for (;;) {
    auto n = read_some(fd->get(), buf, buf_size);
    if (!n) return n.error();
    if (*n == 0) break;
    if (written + *n > size) return make_error(Errc::kInternal, "object larger than its manifest entry");
    if (auto st = sink(std::string_view(buf, *n)); !st) return st;
    written += *n;
  }
  if (written != size) return make_error(Errc::kInternal, "object shorter than its manifest entry");
  return pad(sink, size);
}

}  // namespace

common::Status write_tar(const ObjectStore& store, const Manifest& manifest, const TarSink& sink) {
  constexpr size_t kBuf = 1 << 20;
  auto buf = std::make_unique_for_overwrite<char[]>(kBuf);
  for (const Entry& e : manifest.entries) {
    if (auto st = emit_entry(store, e, sink, buf.get(), kBuf); !st) return st;
  }
  static const char zeros[2 * kBlock] = {};
  return sink(std::string_view(zeros, sizeof(zeros)));
}

TarSink fd_sink(int fd) {
  return [fd](std::string_view s) { return write_all(fd, s.data(), s.size()); };
}

common::Status write_tar_to_fd(const ObjectStore& store, const Manifest& manifest, int fd) {
  return write_tar(store, manifest, fd_sink(fd));
}

common::Result<std::string> tar_to_string(const ObjectStore& store, const Manifest& manifest,
                                          uint64_t max_bytes) {
  std::string out;
  auto st = write_tar(store, manifest, [&](std::string_view s) -> common::Status {
    if (out.size() + s.size() > max_bytes) return make_error(Errc::kTooLarge, "archive exceeds the size limit");
    out.append(s);
    return common::ok();
  });
  if (!st) return st.error();
  return out;
}

}  // namespace cellgate::workspace
