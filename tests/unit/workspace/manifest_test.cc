// SPDX-License-Identifier: BSD-3-Clause
// manifest tests: byte-safe encoding, strict parsing, diffs.
#include <catch2/catch.hpp>

#include <string>

#include "workspace/manifest.h"

using namespace cellgate::workspace;

namespace {

Manifest sample() {
  Manifest m;
  m.id = "00000001-abcdef01";
  m.created_ns = 1234567890123;
  m.automatic = true;
  m.label = "";
  Entry d;
  d.path = "dir";
  d.type = EntryType::kDir;
  d.mode = 0755;
  Entry f;
  f.path = std::string("dir/new\nline \xff\xfe %name");
  f.type = EntryType::kFile;
  f.mode = 0644;
  f.size = 3;
  f.hash = std::string(64, 'a');
  Entry l;
  l.path = "link";
  l.type = EntryType::kSymlink;
  l.mode = 0777;
  l.link_target = "../../etc/shadow";
  m.entries = {d, f, l};
  return m;
}

}  // namespace

TEST_CASE("escape round-trips every byte", "[workspace]") {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  std::string esc = escape_field(all);
  CHECK(esc.find(' ') == std::string::npos);
  CHECK(esc.find('\n') == std::string::npos);
  auto back = unescape_field(esc);
  REQUIRE(back);
  CHECK(*back == all);
  CHECK(escape_field("") == "%");
  CHECK(unescape_field("%")->empty());
  CHECK_FALSE(unescape_field("%4"));
  CHECK_FALSE(unescape_field("%zz"));
}

TEST_CASE("manifest serialize/parse round-trip with hostile names", "[workspace]") {
  Manifest m = sample();
  std::string text = serialize_manifest(m);
  auto p = parse_manifest(text);
  REQUIRE(p);
  CHECK(p->id == m.id);
  CHECK(p->created_ns == m.created_ns);
  CHECK(p->automatic);
  REQUIRE(p->entries.size() == 3);
  CHECK(p->entries[1].path == m.entries[1].path);
  CHECK(p->entries[1].hash == m.entries[1].hash);
  CHECK(p->entries[2].link_target == "../../etc/shadow");
  CHECK(p->entry_count == 3);
  CHECK(p->total_bytes == 3);
  auto h = parse_manifest_header(text);
  REQUIRE(h);
  CHECK(h->entries.empty());
  CHECK(h->entry_count == 3);
}

TEST_CASE("manifest parse rejects damage", "[workspace]") {
  std::string text = serialize_manifest(sample());
  std::string flipped = text;
  flipped[text.size() / 2] ^= 1;
  CHECK_FALSE(parse_manifest(flipped));
  CHECK_FALSE(parse_manifest(text.substr(0, text.size() - 1)));
  CHECK_FALSE(parse_manifest(""));
  // A well-sealed manifest with an escaping path is still refused.
  Manifest evil = sample();
  evil.entries[2].path = "../escape";
  CHECK_FALSE(parse_manifest(serialize_manifest(evil)));
  Manifest unsorted = sample();
  std::swap(unsorted.entries[0], unsorted.entries[2]);
  CHECK_FALSE(parse_manifest(serialize_manifest(unsorted)));
}

TEST_CASE("diff reports added, removed and changed paths", "[workspace]") {
  Manifest a = sample();
  Manifest b = sample();
  b.entries[1].hash = std::string(64, 'b');  // content change
  b.entries.erase(b.entries.begin() + 2);    // link removed
  Entry n;
  n.path = "zz";
  n.type = EntryType::kFile;
  n.hash = std::string(64, 'c');
  b.entries.push_back(n);
  Diff d = diff_entries(a.entries, b.entries);
  CHECK(d.added == std::vector<std::string>{"zz"});
  CHECK(d.removed == std::vector<std::string>{"link"});
  CHECK(d.changed == std::vector<std::string>{a.entries[1].path});
  CHECK(diff_entries(a.entries, a.entries).empty());
  // mtime alone is not a change; mode is.
  Manifest c = sample();
  c.entries[0].mtime_ns = 99;
  CHECK(diff_entries(a.entries, c.entries).empty());
  c.entries[0].mode = 0700;
  CHECK(diff_entries(a.entries, c.entries).changed.size() == 1);
}
