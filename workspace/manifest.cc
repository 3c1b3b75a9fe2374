// SPDX-License-Identifier: BSD-3-Clause
// manifest: one snapshot's tree listing, its byte-safe text encoding, and diffs between listings.
#include "workspace/manifest.h"

#include <charconv>

#include <fmt/core.h>

#include "workspace/safe_path.h"
#include "workspace/sha256.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;

namespace {

constexpr std::string_view kMagic = "cellgate-manifest 1";

common::Error bad(std::string_view why) {
  return make_error(Errc::kBadRequest, fmt::format("malformed manifest: {}", why));
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= line.size()) {
    size_t sp = line.find(' ', start);
    if (sp == std::string_view::npos) sp = line.size();
    out.push_back(line.substr(start, sp - start));
    start = sp + 1;
  }
  return out;
}

template <typename T>
bool parse_num(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

constexpr size_t kHeaderLines = 7;

common::Result<Manifest> parse_header_lines(const std::vector<std::string_view>& lines) {
  if (lines.size() < kHeaderLines || lines[0] != kMagic) return bad("header");
  Manifest m;
  auto header = [&](size_t i, std::string_view key) -> std::string_view {
    auto f = split(lines[i]);
    return f.size() == 2 && f[0] == key ? f[1] : std::string_view();
  };
  auto id = unescape_field(header(1, "id"));
  auto label = unescape_field(header(4, "label"));
  std::string_view kind = header(3, "kind");
  if (!id || !label || !parse_num(header(2, "created_ns"), m.created_ns) ||
      !parse_num(header(5, "count"), m.entry_count) || !parse_num(header(6, "bytes"), m.total_bytes) ||
      (kind != "auto" && kind != "manual")) {
    return bad("header fields");
  }
  m.id = std::move(id.value());
  m.label = std::move(label.value());
  m.automatic = kind == "auto";
  return m;
}

}  // namespace

std::string escape_field(std::string_view raw) {
  // "%" alone is the empty string: a real '%' is always written "%25", so it cannot clash.
  if (raw.empty()) return "%";
  std::string out;
  out.reserve(raw.size());
  for (unsigned char c : raw) {
    if (c <= 0x20 || c >= 0x7f || c == '%') {
      out += fmt::format("%{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

common::Result<std::string> unescape_field(std::string_view s) {
  if (s == "%") return std::string();
  if (s.empty()) return bad("empty field");
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return bad("truncated escape");
    int hi = hex_value(s[i + 1]);
    int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return bad("bad escape");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string serialize_manifest(const Manifest& m) {
  std::string out;
  out += kMagic;
  uint64_t bytes = 0;
  for (const Entry& e : m.entries) bytes += e.size;
  out += fmt::format("\nid {}\ncreated_ns {}\nkind {}\nlabel {}\ncount {}\nbytes {}\n", escape_field(m.id),
                     m.created_ns, m.automatic ? "auto" : "manual", escape_field(m.label),
                     m.entries.size(), bytes);
  for (const Entry& e : m.entries) {
    std::string common_part = fmt::format("{} {:o} {} {} {}", static_cast<char>(e.type), e.mode,
                                          e.uid, e.gid, e.mtime_ns);
    switch (e.type) {
      case EntryType::kDir:
        out += fmt::format("{} {}\n", common_part, escape_field(e.path));
        break;
      case EntryType::kFile:
        out += fmt::format("{} {} {}{} {}\n", common_part, e.size, e.hash, e.sparse ? " sparse" : "", escape_field(e.path));
        break;
      case EntryType::kSymlink:
        out += fmt::format("{} {} {}\n", common_part, escape_field(e.link_target), escape_field(e.path));
        break;
    }
  }
  out += fmt::format("checksum {}\n", sha256_hex(out));
  return out;
}

common::Result<Manifest> parse_manifest(std::string_view text) {
  size_t tail = text.rfind("checksum ");
  if (tail == std::string_view::npos || text.empty() || text.back() != '\n') return bad("no checksum");
  std::string_view body = text.substr(0, tail);
  std::string_view sum = text.substr(tail + 9, text.size() - tail - 10);
  if (sha256_hex(body) != sum) return bad("checksum mismatch");

  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < body.size()) {
    size_t nl = body.find('\n', start);
    if (nl == std::string_view::npos) return bad("unterminated line");
    lines.push_back(body.substr(start, nl - start));
    start = nl + 1;
  }
  auto parsed = parse_header_lines(lines);
  if (!parsed) return parsed.error();
  Manifest m = std::move(parsed.value());
  size_t count = m.entry_count;
  if (count != lines.size() - kHeaderLines) return bad("entry count");
  m.entries.reserve(count);
  for (size_t i = kHeaderLines; i < lines.size(); ++i) {
    auto f = split(lines[i]);
    if (f.size() < 6 || f[0].size() != 1) return bad("entry fields");
    Entry e;
    char t = f[0][0];
    size_t want = t == 'd' ? 6 : t == 'f' ? 8 : t == 'l' ? 7 : 0;
    // A sparse file's line has one more field before its path (older manifests never have it).
    const bool sparse = t == 'f' && f.size() == 9 && f[7] == "sparse";
    if (want == 0 || f.size() != want + (sparse ? size_t{1} : size_t{0})) return bad("entry type");
    e.sparse = sparse;
    e.type = static_cast<EntryType>(t);
    if (!parse_num(f[1], e.mode, 8) || e.mode > 07777 || !parse_num(f[2], e.uid) ||
        !parse_num(f[3], e.gid) || !parse_num(f[4], e.mtime_ns)) {
      return bad("entry metadata");
    }
    if (t == 'f') {
      if (!parse_num(f[5], e.size) || !is_sha256_hex(f[6])) return bad("file entry");
      e.hash = std::string(f[6]);
    } else if (t == 'l') {
      auto target = unescape_field(f[5]);
      if (!target || target->empty()) return bad("symlink target");
      e.link_target = std::move(target.value());
    }
    auto path = unescape_field(f.back());
    if (!path || !validate_relative_path(*path) || path->back() == '/') return bad("entry path");
    e.path = std::move(path.value());
    if (!m.entries.empty() && !(m.entries.back().path < e.path)) return bad("entries not sorted");
    m.entries.push_back(std::move(e));
  }
  return m;
}

common::Result<Manifest> parse_manifest_header(std::string_view prefix) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (lines.size() < kHeaderLines) {
    size_t nl = prefix.find('\n', start);
    if (nl == std::string_view::npos) return bad("short header");
    lines.push_back(prefix.substr(start, nl - start));
    start = nl + 1;
  }
  return parse_header_lines(lines);
}

bool same_content(const Entry& a, const Entry& b) {
  if (a.type != b.type || a.mode != b.mode) return false;
  if (a.type == EntryType::kFile) return a.hash == b.hash && a.size == b.size && a.sparse == b.sparse;
  if (a.type == EntryType::kSymlink) return a.link_target == b.link_target;
  return true;
}

Diff diff_entries(const std::vector<Entry>& from, const std::vector<Entry>& to) {
  Diff d;
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    if (j == to.size() || (i < from.size() && from[i].path < to[j].path)) {
      d.removed.push_back(from[i++].path);
    } else if (i == from.size() || to[j].path < from[i].path) {
      d.added.push_back(to[j++].path);
    } else {
      if (!same_content(from[i], to[j])) d.changed.push_back(to[j].path);
      ++i;
      ++j;
    }
  }
  return d;
}

}  // namespace cellgate::workspace
