// SPDX-License-Identifier: BSD-3-Clause
// session_store: jupyter_server's sessions, in memory.
#include "gateway/session_store.h"

#include <algorithm>

#include "common/random.h"

namespace cellgate::gateway {

SessionRecord& SessionStore::create(SessionRecord record) {
  record.id = common::random_uuid();
  records_.push_back(std::move(record));
  return records_.back();
}

SessionRecord* SessionStore::find(const std::string& id) {
  for (auto& r : records_) if (r.id == id) return &r;
  return nullptr;
}

SessionRecord* SessionStore::find_by_path(const std::string& path) {
  for (auto& r : records_) if (r.path == path) return &r;
  return nullptr;
}

bool SessionStore::remove(const std::string& id) {
  auto it = std::find_if(records_.begin(), records_.end(), [&](const auto& r) { return r.id == id; });
  if (it == records_.end()) return false;
  records_.erase(it);
  return true;
}

void SessionStore::remove_for_kernel(const std::string& kernel_id) {
  records_.erase(std::remove_if(records_.begin(), records_.end(), [&](const auto& r) { return r.kernel_id == kernel_id; }),
                 records_.end());
}

std::vector<SessionRecord*> SessionStore::list() {
  std::vector<SessionRecord*> out;
  for (auto& r : records_) out.push_back(&r);
  return out;
}

}  // namespace cellgate::gateway
