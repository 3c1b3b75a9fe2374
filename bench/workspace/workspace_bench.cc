// SPDX-License-Identifier: BSD-3-Clause
// workspace_bench: snapshot/incremental/restore timings against cp -a and tar -cf on one tree.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "workspace/io_util.h"
#include "workspace/workspace_manager.h"

namespace ws = cellgate::workspace;

namespace {

struct Args {
  uint64_t files = 10'000;
  uint64_t bytes = uint64_t{1} << 30;
  std::string dir;  // scratch parent; default /tmp
  bool volume = false;  // the workspaces in a btrfs volume (volume.h; needs root)
};

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: workspace_bench [--quick] [--files N] [--bytes N[K|M|G]] [--dir PATH] [--volume]\n");
  std::exit(2);
}

uint64_t parse_size(std::string_view s) {
  if (s.empty()) usage();
  uint64_t mult = 1;
  char last = s.back();
  if (last == 'K' || last == 'M' || last == 'G') {
    mult = last == 'K' ? 1ULL << 10 : last == 'M' ? 1ULL << 20 : 1ULL << 30;
    s.remove_suffix(1);
  }
  char* end = nullptr;
  std::string copy(s);
  unsigned long long v = std::strtoull(copy.c_str(), &end, 10);
  if (end == copy.c_str() || *end != '\0' || v == 0) usage();
  return v * mult;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto next = [&]() -> std::string_view {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (arg == "--quick") {
      a.files = 100;
      a.bytes = 20ULL << 20;
    } else if (arg == "--files") {
      a.files = parse_size(next());
    } else if (arg == "--bytes") {
      a.bytes = parse_size(next());
    } else if (arg == "--dir") {
      a.dir = std::string(next());
    } else if (arg == "--volume") {
      a.volume = true;
    } else {
      usage();
    }
  }
  return a;
}

std::string g_scratch;  // removed on every exit path

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "workspace_bench: %s\n", what.c_str());
  if (!g_scratch.empty()) (void)ws::remove_tree_at(AT_FDCWD, g_scratch);
  std::exit(1);
}

template <typename T>
T check(cellgate::common::Result<T> r, const char* what) {
  if (!r) die(fmt::format("{}: {}", what, r.error().message));
  return std::move(r.value());
}

void write_file(const std::string& path, const std::string& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || !ws::write_all(fd, data.data(), data.size())) die("write " + path);
  ::close(fd);
}

// 1% of the files carry 80% of the bytes, as notebooks with a few datasets do; 100 files per dir.
std::string small_path(const std::string& root, uint64_t i) { return fmt::format("{}/d{}/f{}", root, i / 100, i); }

void generate(const std::string& root, const Args& a) {
  std::mt19937_64 rng(42);
  uint64_t big = std::max<uint64_t>(1, a.files / 100);
  uint64_t small = a.files > big ? a.files - big : 0;
  uint64_t big_size = a.bytes * 8 / 10 / big;
  uint64_t small_size = small ? a.bytes * 2 / 10 / small : 0;
  std::string buf;
  for (uint64_t i = 0; i < a.files; ++i) {
    if (i % 100 == 0 && ::mkdir(fmt::format("{}/d{}", root, i / 100).c_str(), 0755) != 0) die("mkdir");
    uint64_t size = i < small ? small_size : big_size;
    buf.resize((size + 7) / 8 * 8);
    for (size_t k = 0; k < buf.size(); k += 8) {
      uint64_t v = rng();
      std::memcpy(buf.data() + k, &v, 8);
    }
    buf.resize(size);
    write_file(small_path(root, i), buf);
  }
}

double timed(const std::function<void()>& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run(const std::string& cmd) {
  if (std::system(cmd.c_str()) != 0) die("command failed: " + cmd);
}

void settle() { ::usleep(150'000); }  // past the racy-timestamp window of the stat cache

}  // namespace

int main(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  std::string parent = a.dir.empty() ? "/tmp" : a.dir;
  std::string tmpl = parent + "/cellgate-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) die("mkdtemp in " + parent);
  const std::string scratch = tmpl;
  g_scratch = scratch;

  ws::WorkspaceConfig config;
  config.max_bytes = a.bytes * 2;
  config.max_files = a.files * 2 + 1000;
  if (a.volume) {
    config.volume = ws::VolumeMode::kOn;
    config.volume_bytes = std::max<uint64_t>(a.bytes * 5, uint64_t{2} << 30);
  }
  std::unique_ptr<ws::WorkspaceManager> mgr;
  double t_open = timed([&] { mgr = check(ws::WorkspaceManager::open(scratch + "/data", config), "open data dir"); });
  ws::Workspace w(mgr->store(), "", config);
  double t_create = timed([&] { w = check(mgr->create({"bench", "w"}), "create workspace"); });
  generate(w.tree_path(), a);
  run("sync");
  settle();

  ws::SnapshotResult full, incr;
  double t_full = timed([&] { full = check(w.snapshot({}), "full snapshot"); });
  // One 8-byte in-place change in one small file (jail-on-this-machine.md §5's scenario).
  int fd = ::open(small_path(w.tree_path(), 0).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::pwrite(fd, "CHANGED!", 8, 0) != 8) die("modify");
  ::close(fd);
  settle();
  double t_incr = timed([&] { incr = check(w.snapshot({}), "incremental snapshot"); });
  if (!incr.created || incr.files_hashed != 1) die(fmt::format("incremental hashed {} files", incr.files_hashed));
  double t_noop = timed([&] { (void)check(w.snapshot({}), "no-change snapshot"); });
  double t_restore_inplace = timed([&] { (void)check(w.restore(full.id), "restore in place"); });
  double t_fork = timed([&] { (void)check(mgr->fork({"bench", "w"}, full.id, {"bench", "fork"}), "fork"); });
  double t_cp = timed([&] { run(fmt::format("cp -a '{}' '{}/cp-copy'", w.tree_path(), scratch)); });
  double t_cp_sync = timed([&] { run("sync"); });
  double t_tar = timed([&] { run(fmt::format("tar -cf '{}/tree.tar' -C '{}' .", scratch, w.tree_path())); });
  double t_tar_ours = timed([&] {
    int out = ::open((scratch + "/snap.tar").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0 || !w.write_tar(full.id, ws::fd_sink(out))) die("write_tar");
    ::close(out);
  });
  // What a snapshot by reflink (FICLONE, btrfs and XFS only) would cost: every file shared, not copied.
  double t_reflink = -1;
  if (a.volume) {
    t_reflink = timed([&] {
      run(fmt::format("cp -a --reflink=always '{}' '{}/reflink-copy'", w.tree_path(), mgr->volume()->mount_point()));
    });
  }

  std::printf("workspace_bench: %llu files, %.1f MiB (full snapshot hashed %llu files, %.1f MiB)\n\n",
              static_cast<unsigned long long>(a.files), static_cast<double>(a.bytes) / (1 << 20),
              static_cast<unsigned long long>(full.files_hashed), static_cast<double>(full.bytes_hashed) / (1 << 20));
  std::printf("| operation | seconds | vs cp -a |\n|---|---|---|\n");
  auto row = [&](const char* name, double t) { std::printf("| %s | %.4f | %.2fx |\n", name, t, t / t_cp); };
  row("full snapshot (hash + store + syncfs)", t_full);
  row("incremental snapshot, 1 file changed", t_incr);
  row("snapshot, nothing changed", t_noop);
  row("restore in place, 1 file differs", t_restore_inplace);
  row("fork = full restore into new workspace", t_fork);
  row("cp -a (no sync)", t_cp);
  row("sync after cp -a", t_cp_sync);
  row("tar -cf of the live tree", t_tar);
  row("tar of the snapshot (write_tar)", t_tar_ours);
  row("open the data dir (with --volume: make the image, mkfs, mount)", t_open);
  row("create a workspace (with --volume: a subvolume and its quota)", t_create);
  if (t_reflink >= 0) row("cp -a --reflink=always of the tree, in the volume", t_reflink);
  if (mgr->volume() != nullptr) {
    (void)ws::remove_tree_at(AT_FDCWD, mgr->volume()->mount_point() + "/reflink-copy");
    mgr->volume()->release();
  }
  mgr.reset();
  (void)ws::remove_tree_at(AT_FDCWD, scratch);
  return 0;
}
