// SPDX-License-Identifier: BSD-3-Clause
// cpu_ledger: kernels' CPU time as a counter that never goes down when a kernel stops or restarts.
#include "metrics/cpu_ledger.h"

#include <algorithm>
#include <cmath>

namespace cellgate::metrics {

void CpuLedger::observe(const Process& process, const std::string& owner, double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  const auto micros = static_cast<uint64_t>(std::llround(seconds * 1e6));
  auto [it, fresh] = running_.try_emplace(process, Reading{owner, micros});
  if (!fresh) it->second.micros = std::max(it->second.micros, micros);
}

void CpuLedger::retire_all_but(const std::set<Process>& running) {
  for (auto it = running_.begin(); it != running_.end();) {
    if (running.contains(it->first)) {
      ++it;
      continue;
    }
    retired_[it->second.owner] += it->second.micros;
    it = running_.erase(it);
  }
}

double CpuLedger::total() const {
  uint64_t sum = 0;
  for (const auto& [owner, micros] : retired_) sum += micros;
  for (const auto& [process, reading] : running_) sum += reading.micros;
  return static_cast<double>(sum) / 1e6;
}

std::map<std::string, double> CpuLedger::by_owner() const {
  std::map<std::string, uint64_t> micros = retired_;
  for (const auto& [process, reading] : running_) micros[reading.owner] += reading.micros;
  std::map<std::string, double> out;
  for (const auto& [owner, m] : micros) out[owner] = static_cast<double>(m) / 1e6;
  return out;
}

}  // namespace cellgate::metrics
