// SPDX-License-Identifier: BSD-3-Clause
// object_store: content-addressed (SHA-256) immutable blobs shared by every workspace.
#include "workspace/object_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <set>

#include <fmt/core.h>

#include "common/random.h"
#include "workspace/io_util.h"
#include "workspace/safe_path.h"
#include "workspace/sha256.h"
#include "workspace/sparse_file.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {

constexpr size_t kChunk = 1 << 20;  // in-memory fast path and read size
constexpr size_t kMaxFsyncPerFile = 32;

const char kHex[] = "0123456789abcdef";

}  // namespace

common::Result<ObjectStore> ObjectStore::open(const std::string& dir) {
  for (const std::string& d : {dir, dir + "/objects"}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return errno_error("mkdir " + d, errno);
  }
  ObjectStore store;
  store.dir_ = dir;
  store.objects_fd_.reset(::open((dir + "/objects").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!store.objects_fd_) return errno_error("open objects dir", errno);
  // All 256 fan-out dirs exist up front, so publishing an object never creates a directory.
  for (int i = 0; i < 256; ++i) {
    char name[3] = {kHex[i >> 4], kHex[i & 15], 0};
    if (::mkdirat(store.objects_fd_.get(), name, 0700) != 0 && errno != EEXIST) {
      return errno_error("mkdir objects fan-out", errno);
    }
  }
  if (::fsync(store.objects_fd_.get()) != 0) return errno_error("fsync objects dir", errno);
  return store;
}

std::string ObjectStore::relative_path(std::string_view hash) {
  return fmt::format("{}/{}", hash.substr(0, 2), hash.substr(2));
}

bool ObjectStore::contains(std::string_view hash) const {
  if (!is_sha256_hex(hash)) return false;
  struct stat st {};
  return ::fstatat(objects_fd_.get(), relative_path(hash).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode);
}

bool ObjectStore::reuse(std::string_view hash) const {
  if (!is_sha256_hex(hash)) return false;
  // utimensat(2) with no times: now, for the file's owner; ENOENT when absent (or gc took it meanwhile).
  return ::utimensat(objects_fd_.get(), relative_path(hash).c_str(), nullptr, AT_SYMLINK_NOFOLLOW) == 0;
}

common::Result<UniqueFd> ObjectStore::open_object(std::string_view hash) const {
  if (!is_sha256_hex(hash)) return make_error(Errc::kBadRequest, "malformed object hash");
  UniqueFd fd(::openat(objects_fd_.get(), relative_path(hash).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return errno_error(fmt::format("open object {}", hash), errno);
  return fd;
}

common::Result<std::string> ObjectStore::rehash(std::string_view hash) const {
  auto fd = open_object(hash);
  if (!fd) return fd.error();
  Sha256 h;
  auto buf = std::make_unique_for_overwrite<char[]>(kChunk);
  for (;;) {
    auto n = read_some(fd->get(), buf.get(), kChunk);
    if (!n) return n.error();
    if (*n == 0) break;
    h.update(buf.get(), *n);
  }
  return h.hex_digest();
}

common::Status ObjectStore::for_each_object(
    const std::function<void(const std::string&, uint64_t)>& fn) const {
  for (int i = 0; i < 256; ++i) {
    char name[3] = {kHex[i >> 4], kHex[i & 15], 0};
    auto entries = list_dir_at(objects_fd_.get(), name);
    if (!entries) return entries.error();
    for (const auto& e : *entries) {
      if (!e.empty() && e[0] == '.') continue;  // a write in flight
      std::string hash = std::string(name) + e;
      struct stat st {};
      if (::fstatat(objects_fd_.get(), relative_path(hash).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      fn(hash, static_cast<uint64_t>(st.st_size));
    }
  }
  return common::ok();
}

common::Status ObjectStore::remove_object(std::string_view hash) {
  if (hash.size() < 3) return make_error(Errc::kBadRequest, "malformed object name");
  if (::unlinkat(objects_fd_.get(), relative_path(hash).c_str(), 0) != 0 && errno != ENOENT) {
    return errno_error("unlink object", errno);
  }
  return common::ok();
}

common::Result<uint64_t> ObjectStore::remove_temps(std::chrono::seconds older_than) {
  uint64_t removed = 0;
  const time_t cutoff = ::time(nullptr) - static_cast<time_t>(older_than.count());
  for (int i = 0; i < 256; ++i) {
    char name[3] = {kHex[i >> 4], kHex[i & 15], 0};
    auto entries = list_dir_at(objects_fd_.get(), name);
    if (!entries) return entries.error();
    for (const auto& e : *entries) {
      if (e.empty() || e[0] != '.') continue;
      std::string rel = std::string(name) + "/" + e;
      struct stat st {};
      if (older_than.count() > 0 &&
          (::fstatat(objects_fd_.get(), rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_mtime > cutoff))
        continue;  // a write in flight, maybe on another node
      if (::unlinkat(objects_fd_.get(), rel.c_str(), 0) == 0) ++removed;
    }
  }
  return removed;
}

common::Result<FileLock> ObjectStore::lock(FileLock::Mode mode) const {
  return FileLock::acquire(dir_ + "/store.lock", mode);
}

ObjectBatch::~ObjectBatch() {
  for (const auto& [temp, hash] : staged_) ::unlinkat(store_.objects_fd(), temp.c_str(), 0);
}

common::Result<std::pair<UniqueFd, std::string>> ObjectBatch::new_temp(std::string_view dir) {
  std::string name = fmt::format("{}/.tmp-{}-{}", dir, ::getpid(), common::random_hex(8));
  UniqueFd fd(::openat(store_.objects_fd(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0444));
  if (!fd) return errno_error("create object temp", errno);
  return std::make_pair(std::move(fd), std::move(name));
}

common::Status ObjectBatch::stage(std::string temp, const std::string& hash) {
  staged_hashes_.emplace(hash, temp);
  staged_.emplace_back(std::move(temp), hash);
  if (after_object_write) after_object_write(staged_.size());
  return common::ok();
}

common::Result<std::string> ObjectBatch::put_bytes(std::string_view data) {
  std::string hash = sha256_hex(data);
  bytes_read_ += data.size();
  if (staged_hashes_.count(hash) != 0 || store_.reuse(hash)) return hash;
  auto temp = new_temp(std::string_view(hash).substr(0, 2));
  if (!temp) return temp.error();
  if (auto st = write_all(temp->first.get(), data.data(), data.size()); !st) {
    ::unlinkat(store_.objects_fd(), temp->second.c_str(), 0);
    return st.error();
  }
  if (auto st = stage(std::move(temp->second), hash); !st) return st.error();
  return hash;
}

common::Result<std::string> ObjectBatch::put_fd(int fd, uint64_t max_bytes) {
  if (!buf_) buf_ = std::make_unique_for_overwrite<char[]>(kChunk);  // once per batch, not per file
  char* buf = buf_.get();
  size_t have = 0;
  // Small files (the common case) are read whole, so known content costs no write at all.
  while (have < kChunk) {
    auto n = read_some(fd, buf + have, kChunk - have);
    if (!n) return n.error();
    if (*n == 0) {
      if (have > max_bytes) return make_error(Errc::kTooLarge, "file exceeds the byte cap");
      return put_bytes(std::string_view(buf, have));
    }
    have += *n;
  }
  unsigned char r = 0;
  common::random_bytes(&r, 1);
  const char dir[3] = {kHex[r >> 4], kHex[r & 15], 0};  // the hash is not known yet
  auto temp = new_temp(dir);
  if (!temp) return temp.error();
  auto fail = [&](common::Error e) -> common::Result<std::string> {
    ::unlinkat(store_.objects_fd(), temp->second.c_str(), 0);
    return e;
  };
  Sha256 h;
  uint64_t total = 0;
  for (;;) {
    total += have;
    bytes_read_ += have;
    if (total > max_bytes) return fail(make_error(Errc::kTooLarge, "file exceeds the byte cap"));
    h.update(buf, have);
    if (auto st = write_all(temp->first.get(), buf, have); !st) return fail(st.error());
    auto n = read_some(fd, buf, kChunk);
    if (!n) return fail(n.error());
    if (*n == 0) break;
    have = *n;
  }
  std::string hash = h.hex_digest();
  if (staged_hashes_.count(hash) != 0 || store_.reuse(hash)) {
    ::unlinkat(store_.objects_fd(), temp->second.c_str(), 0);
    return hash;
  }
  if (auto st = stage(std::move(temp->second), hash); !st) return st.error();
  return hash;
}

common::Result<ObjectBatch::Put> ObjectBatch::put_file(int fd, uint64_t max_bytes) {
  struct stat st {};
  std::optional<SparseLayout> layout;
  if (::fstat(fd, &st) == 0) layout = sparse_layout(fd, st);
  if (!layout) {
    uint64_t before = bytes_read_;
    auto h = put_fd(fd, max_bytes);
    if (!h) return h.error();
    return Put{std::move(h.value()), bytes_read_ - before, bytes_read_ - before, false};
  }
  uint64_t data = 0;
  for (const Extent& e : layout->extents) data += e.length;
  if (data > max_bytes) return make_error(Errc::kTooLarge, "file exceeds the byte cap");
  unsigned char r = 0;
  common::random_bytes(&r, 1);
  const char dir[3] = {kHex[r >> 4], kHex[r & 15], 0};  // the hash is not known yet
  auto temp = new_temp(dir);
  if (!temp) return temp.error();
  auto fail = [&](common::Error e) -> common::Result<Put> {
    ::unlinkat(store_.objects_fd(), temp->second.c_str(), 0);
    return e;
  };
  Sha256 h;
  const std::string header = sparse_header(*layout);
  h.update(header.data(), header.size());
  if (auto st2 = write_all(temp->first.get(), header.data(), header.size()); !st2) return fail(st2.error());
  auto read = read_extents(fd, *layout, [&](std::string_view chunk) {
    h.update(chunk.data(), chunk.size());
    return write_all(temp->first.get(), chunk.data(), chunk.size());
  });
  if (!read) return fail(read.error());
  bytes_read_ += *read;
  Put put{h.hex_digest(), layout->size, *read, true};
  if (staged_hashes_.count(put.hash) != 0 || store_.reuse(put.hash)) {
    ::unlinkat(store_.objects_fd(), temp->second.c_str(), 0);
    return put;
  }
  if (auto s = stage(std::move(temp->second), put.hash); !s) return s.error();
  return put;
}

uint64_t ObjectBatch::object_size(const std::string& hash) const {
  struct stat st {};
  if (auto it = staged_hashes_.find(hash); it != staged_hashes_.end())
    return ::fstatat(store_.objects_fd(), it->second.c_str(), &st, 0) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  if (::fstatat(store_.objects_fd(), ObjectStore::relative_path(hash).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

common::Status ObjectBatch::commit() {
  if (staged_.empty()) return common::ok();
  // Objects are renamed into place only once durable, so a visible object is never torn. For
  // many objects one syncfs(2) beats an fsync per file; for a few, syncfs would also flush
  // everyone else's dirty data on this filesystem.
  if (staged_.size() > kMaxFsyncPerFile) {
    if (::syncfs(store_.objects_fd()) != 0) return errno_error("syncfs object store", errno);
  } else {
    for (const auto& [temp, hash] : staged_) {
      UniqueFd fd(::openat(store_.objects_fd(), temp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      if (!fd || ::fsync(fd.get()) != 0) return errno_error("fsync object", errno);
    }
  }
  std::set<std::string> dirs;
  for (const auto& [temp, hash] : staged_) {
    std::string rel = ObjectStore::relative_path(hash);
    if (::renameat(store_.objects_fd(), temp.c_str(), store_.objects_fd(), rel.c_str()) != 0) {
      return errno_error("publish object", errno);
    }
    dirs.insert(hash.substr(0, 2));
  }
  bool many = staged_.size() > kMaxFsyncPerFile;
  staged_.clear();
  staged_hashes_.clear();
  // The renames must be durable before a manifest names these objects.
  if (many) {
    if (::syncfs(store_.objects_fd()) != 0) return errno_error("syncfs object store", errno);
    return common::ok();
  }
  for (const auto& d : dirs) {
    UniqueFd dfd(::openat(store_.objects_fd(), d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dfd || ::fsync(dfd.get()) != 0) return errno_error("fsync object dir", errno);
  }
  return common::ok();
}

}  // namespace cellgate::workspace
