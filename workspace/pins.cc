// SPDX-License-Identifier: BSD-3-Clause
// pins: objects of the store that something other than a snapshot holds.
#include "workspace/pins.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/unique_fd.h"
#include "workspace/io_util.h"
#include "workspace/layout.h"
#include "workspace/safe_path.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {

// 64 bytes of hex and a newline per hash: a pin of a million objects.
constexpr uint64_t kMaxPinBytes = uint64_t{65} << 20;

bool is_hex(const std::string& h) {
  for (char c : h)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_hash(const std::string& h) { return h.size() == 64 && is_hex(h); }

common::Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return errno_error("mkdir " + path, errno);
  return common::ok();
}

// A last line without its newline, or a shorter run of hex ended by a later append's leading newline,
// is a write a crash cut short: its object was never committed.
common::Result<std::vector<std::string>> parse(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) break;
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || (line.size() < 64 && is_hex(line))) continue;
    if (!is_hash(line)) return make_error(Errc::kInternal, "pin " + what + ": not a hash: " + line.substr(0, 80));
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

PinsDir pins_dir(const std::string& data_dir, const std::string& store_dir) {
  return PinsDir{(store_dir.empty() ? data_dir : store_dir) + "/pins"};
}

Pins::Pins(PinsDir dir) : root_(std::move(dir.path)) {}

common::Result<std::string> Pins::dir_of(const std::string& kind, const std::string& owner) const {
  if (auto st = validate_name(kind); !st) return st.error();
  if (auto st = validate_name(owner); !st) return st.error();
  return root_ + "/" + kind + "/" + owner;
}

common::Status Pins::add(const std::string& kind, const std::string& owner, const std::string& name,
                         const std::vector<std::string>& hashes) {
  if (auto st = validate_name(name); !st) return st;
  auto dir = dir_of(kind, owner);
  if (!dir) return dir.error();
  for (const auto& d : {root_, root_ + "/" + kind, *dir})
    if (auto st = make_dir(d); !st) return st;
  // The leading newline ends a line a crash may have cut short (parse() skips blank lines).
  std::string text = "\n";
  for (const auto& h : hashes) {
    if (!is_hash(h)) return make_error(Errc::kBadRequest, "not an object hash: " + h);
    text += h;
    text += '\n';
  }
  // O_APPEND: one write(2) of whole lines.
  UniqueFd fd(::open((*dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return errno_error("open pin " + name, errno);
  return write_all(fd.get(), text.data(), text.size());
}

common::Status Pins::replace(const std::string& kind, const std::string& owner, const std::string& name,
                             const std::vector<std::string>& hashes) {
  if (hashes.empty()) return remove(kind, owner, name);
  if (auto st = validate_name(name); !st) return st;
  auto dir = dir_of(kind, owner);
  if (!dir) return dir.error();
  for (const auto& d : {root_, root_ + "/" + kind, *dir})
    if (auto st = make_dir(d); !st) return st;
  std::string text;
  for (const auto& h : hashes) {
    if (!is_hash(h)) return make_error(Errc::kBadRequest, "not an object hash: " + h);
    text += h;
    text += '\n';
  }
  UniqueFd dfd(::open(dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dfd) return errno_error("open " + *dir, errno);
  return write_file_atomic(dfd.get(), name, text);
}

common::Status Pins::remove(const std::string& kind, const std::string& owner, const std::string& name) {
  if (auto st = validate_name(name); !st) return st;
  auto dir = dir_of(kind, owner);
  if (!dir) return dir.error();
  const std::string path = *dir + "/" + name;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("unlink " + path, errno);
  return common::ok();
}

common::Result<std::vector<std::string>> Pins::read(const std::string& kind, const std::string& owner,
                                                    const std::string& name) const {
  if (auto st = validate_name(name); !st) return st.error();
  auto dir = dir_of(kind, owner);
  if (!dir) return dir.error();
  auto text = read_file_at(AT_FDCWD, *dir + "/" + name, kMaxPinBytes);
  if (!text) return text.error();
  return parse(*text, kind + "/" + owner + "/" + name);
}

common::Result<std::vector<std::string>> Pins::names(const std::string& kind, const std::string& owner) const {
  auto dir = dir_of(kind, owner);
  if (!dir) return dir.error();
  auto list = list_dir_at(AT_FDCWD, *dir);
  if (!list && list.error().code == Errc::kNotFound) return std::vector<std::string>();
  if (!list) return list.error();
  std::vector<std::string> out;
  for (auto& n : *list)
    if (validate_name(n) && n[0] != '.') out.push_back(std::move(n));
  return out;
}

common::Result<std::unordered_set<std::string>> Pins::all() const {
  std::unordered_set<std::string> out;
  auto kinds = list_dir_at(AT_FDCWD, root_);
  if (!kinds && kinds.error().code == Errc::kNotFound) return out;
  if (!kinds) return kinds.error();
  for (const auto& kind : *kinds) {
    if (!validate_name(kind)) continue;
    auto owners = list_dir_at(AT_FDCWD, root_ + "/" + kind);
    if (!owners) return owners.error();
    for (const auto& owner : *owners) {
      if (!validate_name(owner)) continue;
      auto pins = names(kind, owner);
      if (!pins) return pins.error();
      for (const auto& name : *pins) {
        auto hashes = read(kind, owner, name);
        if (!hashes && hashes.error().code == Errc::kNotFound) continue;  // removed meanwhile
        if (!hashes) return hashes.error();
        out.insert(hashes->begin(), hashes->end());
      }
    }
  }
  return out;
}

common::Result<size_t> move_local_pins(const std::string& data_dir, const PinsDir& to) {
  const PinsDir from = pins_dir(data_dir, "");
  if (from.path == to.path) return size_t{0};
  Pins here(from), there(to);
  auto kinds = list_dir_at(AT_FDCWD, from.path);
  if (!kinds && kinds.error().code == Errc::kNotFound) return size_t{0};
  if (!kinds) return kinds.error();
  size_t moved = 0;
  for (const auto& kind : *kinds) {
    if (!validate_name(kind)) continue;
    auto owners = list_dir_at(AT_FDCWD, from.path + "/" + kind);
    if (!owners) return owners.error();
    for (const auto& owner : *owners) {
      if (!validate_name(owner)) continue;
      auto names = here.names(kind, owner);
      if (!names) return names.error();
      for (const auto& name : *names) {
        auto mine = here.read(kind, owner, name);
        if (!mine && mine.error().code == Errc::kNotFound) continue;
        if (!mine) return mine.error();
        // A move cut short left both copies: the union, written durably before this copy goes.
        auto theirs = there.read(kind, owner, name);
        if (!theirs && theirs.error().code != Errc::kNotFound) return theirs.error();
        std::vector<std::string> merged = theirs ? std::move(theirs.value()) : std::vector<std::string>{};
        std::unordered_set<std::string> seen(merged.begin(), merged.end());
        for (auto& h : *mine)
          if (seen.insert(h).second) merged.push_back(std::move(h));
        if (auto st = there.replace(kind, owner, name, merged); !st) return st.error();
        if (auto st = here.remove(kind, owner, name); !st) return st.error();
        ++moved;
      }
      ::rmdir((from.path + "/" + kind + "/" + owner).c_str());
    }
    ::rmdir((from.path + "/" + kind).c_str());
  }
  ::rmdir(from.path.c_str());
  return moved;
}

}  // namespace cellgate::workspace
