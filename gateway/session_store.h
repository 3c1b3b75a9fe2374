// SPDX-License-Identifier: BSD-3-Clause
// session_store: jupyter_server's sessions (a path/name/type bound to a kernel), in memory.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cellgate::gateway {

struct SessionRecord {
  std::string id;
  std::string path;
  std::string name;
  std::string type;
  std::string kernel_id;
};

// Io thread only. Insertion order is kept so listings are stable.
class SessionStore {
 public:
  SessionRecord& create(SessionRecord record);  // assigns a fresh id
  SessionRecord* find(const std::string& id);
  SessionRecord* find_by_path(const std::string& path);
  bool remove(const std::string& id);
  // Removes every session bound to kernel_id (the kernel is gone).
  void remove_for_kernel(const std::string& kernel_id);
  std::vector<SessionRecord*> list();

 private:
  std::vector<SessionRecord> records_;
};

}  // namespace cellgate::gateway
