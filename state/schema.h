// SPDX-License-Identifier: BSD-3-Clause
// schema: the ordered list of migrations that builds cellgate.db.
#pragma once

#include <vector>

namespace cellgate::state {

struct Migration {
  int version;      // 1, 2, 3, ...: pending ones are applied in order, together in one transaction
  const char* sql;  // one or more statements
};

// Every migration, oldest first. Append only: a released migration is never edited.
const std::vector<Migration>& migrations();
// The version a freshly migrated file is at.
int latest_schema_version();

}  // namespace cellgate::state
