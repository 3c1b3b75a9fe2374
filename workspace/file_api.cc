// SPDX-License-Identifier: BSD-3-Clause
// file_api: bounded, path-validated file access to a live workspace tree for REST handlers.
#include "workspace/file_api.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/core.h>

#include "common/random.h"
#include "common/unique_fd.h"
#include "workspace/io_util.h"
#include "workspace/safe_path.h"

namespace cellgate::workspace {

using common::Errc;
using common::make_error;
using common::UniqueFd;

namespace {

NodeInfo info_of(std::string name, const struct stat& st) {
  NodeInfo n;
  n.name = std::move(name);
  n.type = S_ISREG(st.st_mode) ? NodeType::kFile : S_ISDIR(st.st_mode) ? NodeType::kDir
           : S_ISLNK(st.st_mode) ? NodeType::kSymlink : NodeType::kOther;
  n.size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  n.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  n.mode = st.st_mode & 07777;
  return n;
}

common::Result<UniqueFd> open_root(const std::string& tree) {
  UniqueFd fd(::open(tree.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return errno_error("open workspace", errno);
  return fd;
}

// Normalises a client's path and opens it beneath the tree (see safe_path.h): the one way in.
common::Result<UniqueFd> open_in_tree(const std::string& tree, std::string_view path, bool allow_root, int flags) {
  auto rel = normalize_relative_path(path, allow_root);
  if (!rel) return rel.error();
  auto root = open_root(tree);
  if (!root) return root.error();
  return open_beneath(root->get(), *rel, flags);
}

// The same for an entry to create, replace or remove: its parent directory and last name.
common::Result<ParentDir> open_parent_in_tree(const std::string& tree, std::string_view path) {
  auto rel = normalize_relative_path(path, false);
  if (!rel) return rel.error();
  auto root = open_root(tree);
  if (!root) return root.error();
  return open_parent_beneath(root->get(), *rel);
}

std::string last_name(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

// Gives a new entry the owner of its parent, as the kernel would have created it.
void inherit_owner(int fd, int parent_fd) {
  struct stat pst {};
  if (::geteuid() == 0 && ::fstat(parent_fd, &pst) == 0) (void)::fchown(fd, pst.st_uid, pst.st_gid);
}

}  // namespace

common::Result<NodeInfo> FileApi::stat(std::string_view path) const {
  auto fd = open_in_tree(tree_, path, true, O_PATH);
  if (!fd) return fd.error();
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return errno_error("fstat", errno);
  return info_of(last_name(normalize_relative_path(path, true).value()), st);
}

common::Result<OpenFile> FileApi::open_file(std::string_view path) const {
  // O_PATH opens nothing (no FIFO rendezvous, no device driver open); check the type first.
  auto probe = open_in_tree(tree_, path, false, O_PATH);
  if (!probe) return probe.error();
  struct stat st {};
  if (::fstat(probe->get(), &st) != 0) return errno_error("fstat", errno);
  if (!S_ISREG(st.st_mode)) return make_error(Errc::kBadRequest, "not a regular file");
  auto fd = open_in_tree(tree_, path, false, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!fd) return fd.error();
  struct stat st2 {};
  if (::fstat(fd->get(), &st2) != 0) return errno_error("fstat", errno);
  if (!S_ISREG(st2.st_mode) || st2.st_ino != st.st_ino) return make_error(Errc::kConflict, "file changed while opening");
  return OpenFile{std::move(fd.value()), static_cast<uint64_t>(st2.st_size)};
}

common::Result<std::string> FileApi::read_file(std::string_view path) const {
  auto file = open_file(path);
  if (!file) return file.error();
  if (file->size > limits_.max_read_bytes) return make_error(Errc::kTooLarge, "file too large to read");
  return read_all(file->fd.get(), limits_.max_read_bytes);
}

common::Result<std::vector<NodeInfo>> FileApi::list_dir(std::string_view path) const {
  auto dir = open_in_tree(tree_, path, true, O_RDONLY | O_DIRECTORY);
  if (!dir) return dir.error();
  auto names = list_dir_at(dir->get(), "");
  if (!names) return names.error();
  if (names->size() > limits_.max_list_entries) return make_error(Errc::kTooLarge, "directory has too many entries");
  std::vector<NodeInfo> out;
  for (auto& n : *names) {
    struct stat st {};
    if (::fstatat(dir->get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    out.push_back(info_of(std::move(n), st));
  }
  std::sort(out.begin(), out.end(), [](const NodeInfo& a, const NodeInfo& b) { return a.name < b.name; });
  return out;
}

common::Status FileApi::write_file(std::string_view path, std::string_view data) const {
  if (data.size() > limits_.max_write_bytes) return make_error(Errc::kTooLarge, "upload too large");
  auto parent = open_parent_in_tree(tree_, path);
  if (!parent) return parent.error();
  int pfd = parent->fd.get();
  struct stat old {};
  bool exists = ::fstatat(pfd, parent->name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists && S_ISLNK(old.st_mode)) return make_error(Errc::kBadRequest, "refusing to replace a symlink");
  if (exists && !S_ISREG(old.st_mode)) return make_error(Errc::kConflict, "not a regular file");
  std::string temp = ".cellgate-upload-" + common::random_hex(8);
  UniqueFd fd(::openat(pfd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return errno_error("create", errno);
  auto fail = [&](common::Error e) -> common::Status {
    ::unlinkat(pfd, temp.c_str(), 0);
    return e;
  };
  if (auto st = write_all(fd.get(), data.data(), data.size()); !st) return fail(st.error());
  if (exists) {
    if (::geteuid() == 0) (void)::fchown(fd.get(), old.st_uid, old.st_gid);
    if (::fchmod(fd.get(), old.st_mode & 0777) != 0) return fail(errno_error("fchmod", errno));
  } else {
    inherit_owner(fd.get(), pfd);
    if (::fchmod(fd.get(), 0644) != 0) return fail(errno_error("fchmod", errno));
  }
  if (::fsync(fd.get()) != 0) return fail(errno_error("fsync", errno));
  if (::renameat(pfd, temp.c_str(), pfd, parent->name.c_str()) != 0) return fail(errno_error("rename", errno));
  return common::ok();
}

common::Status FileApi::make_dir(std::string_view path) const {
  auto parent = open_parent_in_tree(tree_, path);
  if (!parent) return parent.error();
  if (::mkdirat(parent->fd.get(), parent->name.c_str(), 0755) != 0) return errno_error("mkdir", errno);
  UniqueFd fd(::openat(parent->fd.get(), parent->name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd) inherit_owner(fd.get(), parent->fd.get());
  return common::ok();
}

common::Status FileApi::remove(std::string_view path, bool recursive) const {
  auto parent = open_parent_in_tree(tree_, path);
  if (!parent) return parent.error();
  int pfd = parent->fd.get();
  struct stat st {};
  if (::fstatat(pfd, parent->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno_error("stat", errno);
  if (!S_ISDIR(st.st_mode)) {
    if (::unlinkat(pfd, parent->name.c_str(), 0) != 0) return errno_error("unlink", errno);
    return common::ok();
  }
  if (recursive) return remove_tree_at(pfd, parent->name);
  if (::unlinkat(pfd, parent->name.c_str(), AT_REMOVEDIR) != 0) return errno_error("rmdir", errno);
  return common::ok();
}

}  // namespace cellgate::workspace
