// SPDX-License-Identifier: BSD-3-Clause
// counter_store: the kernels' egress counters on disk, so a restarted proxy does not refill the caps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "egress/kernel_table.h"

namespace cellgate::egress {

// DIR/counters.json holds, per kernel, what it has spent against its lifetime caps (bytes each way,
// connections, refusals). The proxy saves it every second when a counter moved, and at exit; a
// proxy that is killed loses what its kernels spent since the last save, never more. Writes are atomic: a temporary file, fsync(2), then
// renameat(2), so a crash leaves the old file or the new one, never half of one.
// runs in: one thread (the proxy's io thread).
class CounterStore {
 public:
  // Creates DIR (0700) if missing and reads DIR/counters.json if present. As root, DIR is given to
  // owner:group, the uid the proxy runs as once it drops privileges (it keeps DIR open and writes
  // through that fd). A file that is not ours (malformed, over 16 MiB, a symlink) is an error with
  // one line: the operator decides, the proxy does not silently start from zero.
  static common::Result<CounterStore> open(const std::string& dir, uid_t owner, gid_t group, size_t max_kernels);
  CounterStore() = default;

  // A kernel's saved counters, handed over once (a later set() of the same kernel replaces a policy
  // in the table, whose counters already survive that). `open` is always 0: connections died with
  // the old proxy.
  std::optional<KernelCounters> take(const std::string& kernel);
  // A kernel removed by the gateway: its saved counters go too.
  void forget(const std::string& kernel) { saved_.erase(kernel); }

  // Writes the table's counters and those not taken yet, when anything moved since the last write.
  common::Status save(const KernelTable& table);
  bool enabled() const { return dir_.valid(); }
  size_t saved_count() const { return saved_.size(); }

 private:
  common::UniqueFd dir_;
  std::string dir_path_;
  std::map<std::string, KernelCounters> saved_;
  // Counters only grow, so the sum of all of them and the number of kernels change whenever
  // anything worth writing does (a kernel removed and another added with equal counters is
  // written at the next change).
  std::pair<uint64_t, size_t> written_{0, 0};
};

}  // namespace cellgate::egress
