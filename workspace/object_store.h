// SPDX-License-Identifier: BSD-3-Clause
// object_store: content-addressed (SHA-256) immutable blobs shared by every workspace.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "workspace/file_lock.h"

namespace cellgate::workspace {

// Layout: <dir>/objects/<2 hex>/<62 hex> (mode 0444), writes in flight as
// <dir>/objects/<2 hex>/.tmp-* (spread over 256 dirs: file creation in one big directory is
// the bottleneck on a busy ext4), <dir>/store.lock (held shared by writers, exclusive by GC).
// Objects appear only by rename after their data is durable. Thread-safe.
class ObjectStore {
 public:
  // Opens or creates the store under dir. Errors: kInternal with errno.
  static common::Result<ObjectStore> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  int objects_fd() const { return objects_fd_.get(); }
  static std::string relative_path(std::string_view hash);  // "ab/cdef…"
  bool contains(std::string_view hash) const;
  // contains(), for an object a new snapshot, pin or journal will name without writing it again: its
  // mtime is set to now, so that a gc on a shared store (whose age rule keeps unmarked objects younger
  // than an hour, gc.h) does not take it before that name is published. False when it is absent, or
  // cannot be touched (then it is written again, which renames a fresh copy over it).
  bool reuse(std::string_view hash) const;
  // Opens an object read-only. kNotFound if absent, kBadRequest if hash is malformed.
  common::Result<common::UniqueFd> open_object(std::string_view hash) const;
  // Re-reads an object and returns its actual SHA-256 (fsck).
  common::Result<std::string> rehash(std::string_view hash) const;
  // Calls fn(name, size) for every object file (not temps); stops at the first error.
  common::Status for_each_object(const std::function<void(const std::string&, uint64_t)>& fn) const;
  common::Status remove_object(std::string_view hash);
  // Removes every temp (crash leftovers) whose mtime is older than older_than (0: all; only safe
  // under the exclusive lock, and only when no other node writes to this store). Returns the count.
  common::Result<uint64_t> remove_temps(std::chrono::seconds older_than = std::chrono::seconds(0));

  // Writers (snapshot, restore, fork) hold kShared; GC holds kExclusive.
  common::Result<FileLock> lock(FileLock::Mode mode) const;

 private:
  std::string dir_;
  common::UniqueFd objects_fd_;
};

// The new objects of one snapshot. put_*() stage content in tmp/; commit() makes every staged
// object durable (syncfs) and renames it into place. Unused temps are removed on destruction.
// Not thread-safe (one per snapshot); different batches may run concurrently.
class ObjectBatch {
 public:
  explicit ObjectBatch(ObjectStore& store) : store_(store) {}
  ~ObjectBatch();
  ObjectBatch(const ObjectBatch&) = delete;
  ObjectBatch& operator=(const ObjectBatch&) = delete;

  // Reads fd to EOF and returns the content hash. More than max_bytes → kTooLarge.
  common::Result<std::string> put_fd(int fd, uint64_t max_bytes);
  // A workspace file: as put_fd, or, for a file with holes, its data extents as a sparse object
  // (sparse_file.h), so that it costs what it holds in time and bytes. max_bytes bounds the bytes read.
  struct Put {
    std::string hash;
    uint64_t size = 0;        // the file's length (sparse) or the bytes read (plain)
    uint64_t bytes_read = 0;
    bool sparse = false;
  };
  common::Result<Put> put_file(int fd, uint64_t max_bytes);
  common::Result<std::string> put_bytes(std::string_view data);
  common::Status commit();

  size_t objects_written() const { return staged_.size(); }
  // The size of an object staged here or in the store (0 when neither has it).
  uint64_t object_size(const std::string& hash) const;
  uint64_t bytes_read() const { return bytes_read_; }
  // Fault-injection seam for tests: called after each staged object with the running count.
  std::function<void(size_t)> after_object_write;

 private:
  // A temp in objects/<dir>/; returns the fd and its path relative to objects/.
  common::Result<std::pair<common::UniqueFd, std::string>> new_temp(std::string_view dir);
  common::Status stage(std::string temp, const std::string& hash);

  ObjectStore& store_;
  std::vector<std::pair<std::string, std::string>> staged_;  // (temp path in objects/, hash)
  std::unordered_map<std::string, std::string> staged_hashes_;  // hash → its temp
  std::unique_ptr<char[]> buf_;  // read buffer, allocated on first use
  uint64_t bytes_read_ = 0;
};

}  // namespace cellgate::workspace
