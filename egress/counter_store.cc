// SPDX-License-Identifier: BSD-3-Clause
// counter_store: the kernels' egress counters on disk, so a restarted proxy does not refill the caps.
#include "egress/counter_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

namespace cellgate::egress {
namespace {

using nlohmann::json;
constexpr const char* kFile = "counters.json";
constexpr const char* kTemporary = "counters.json.tmp";
constexpr off_t kMaxFile = 16 << 20;

common::Error failure(const std::string& what, int err = 0) {
  std::string line = what + (err != 0 ? std::string(": ") + std::strerror(err) : std::string());
  return common::make_error(common::Errc::kBadRequest, "--state-dir: " + line, err);
}

json counters_json(const KernelCounters& c) {
  return {{"bytes_out", c.bytes_out}, {"bytes_in", c.bytes_in}, {"connections", c.connections}, {"refused", c.refused}};
}

std::optional<KernelCounters> parse_counters(const json& j) {
  if (!j.is_object()) return std::nullopt;
  KernelCounters c;
  for (auto [name, field] : {std::pair{"bytes_out", &c.bytes_out}, std::pair{"bytes_in", &c.bytes_in},
                             std::pair{"connections", &c.connections}, std::pair{"refused", &c.refused}}) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
    *field = it->get<uint64_t>();
  }
  return c;
}

uint64_t total(const KernelCounters& c) { return c.bytes_out + c.bytes_in + c.connections + c.refused; }

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

common::Result<CounterStore> CounterStore::open(const std::string& dir, uid_t owner, gid_t group, size_t max_kernels) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return failure("cannot create " + dir, errno);
  CounterStore store;
  store.dir_path_ = dir;
  store.dir_ = common::UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!store.dir_) return failure(dir + " is not a directory", errno);
  if (::geteuid() == 0 && ::fchown(store.dir_.get(), owner, group) != 0) return failure("cannot give " + dir + " to the proxy's user", errno);

  common::UniqueFd file(::openat(store.dir_.get(), kFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!file) {
    if (errno == ENOENT) return store;
    return failure("cannot read " + dir + "/" + kFile, errno);
  }
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxFile)
    return failure(dir + "/" + kFile + " is not a counters file (a regular file of at most 16 MiB)");
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (::pread(file.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    return failure("cannot read " + dir + "/" + kFile, errno);
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("version", 0) != 1 || !j.contains("kernels") || !j["kernels"].is_object())
    return failure(dir + "/" + kFile + " is not a counters file (remove it to start every kernel's counters from zero)");
  for (const auto& [id, value] : j["kernels"].items()) {
    auto c = parse_counters(value);
    if (!c) return failure(dir + "/" + kFile + ": kernel " + id.substr(0, 64) + " has no valid counters");
    if (store.saved_.size() >= max_kernels) break;  // more than the table holds: they could never be set
    store.saved_.emplace(id, *c);
  }
  return store;
}

std::optional<KernelCounters> CounterStore::take(const std::string& kernel) {
  auto it = saved_.find(kernel);
  if (it == saved_.end()) return std::nullopt;
  KernelCounters c = it->second;
  saved_.erase(it);
  return c;
}

common::Status CounterStore::save(const KernelTable& table) {
  if (!dir_) return common::ok();
  std::pair<uint64_t, size_t> now{0, table.size() + saved_.size()};
  for (const auto& [id, k] : table.all()) now.first += total(k->counters);
  for (const auto& [id, c] : saved_) now.first += total(c);
  if (now == written_) return common::ok();

  json kernels = json::object();
  for (const auto& [id, c] : saved_) kernels[id] = counters_json(c);
  for (const auto& [id, k] : table.all()) kernels[id] = counters_json(k->counters);
  std::string text = json{{"version", 1}, {"kernels", std::move(kernels)}}.dump() + "\n";

  common::UniqueFd tmp(::openat(dir_.get(), kTemporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!tmp) return failure("cannot write " + dir_path_ + "/" + kTemporary, errno);
  if (!write_all(tmp.get(), text) || ::fsync(tmp.get()) != 0) {
    int err = errno;
    ::unlinkat(dir_.get(), kTemporary, 0);
    return failure("cannot write " + dir_path_ + "/" + kTemporary, err);
  }
  tmp.reset();
  if (::renameat(dir_.get(), kTemporary, dir_.get(), kFile) != 0) return failure("cannot replace " + dir_path_ + "/" + kFile, errno);
  ::fsync(dir_.get());  // the rename itself survives a power cut (rename(2), fsync(2) on the directory)
  written_ = now;
  return common::ok();
}

}  // namespace cellgate::egress
