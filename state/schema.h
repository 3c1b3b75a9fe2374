// SPDX-License-Identifier: BSD-3-Clause
// schema: the ordered list of migrations that builds the state database, in each backend's dialect.
#pragma once

#include <vector>

#include "state/backend.h"

namespace cellgate::state {

// The same tables, columns and keys in both dialects; only the DDL's words differ (docs/cluster.md).
struct Migration {
  int version;           // 1, 2, 3, ...: pending ones are applied in order, together in one transaction
  const char* sqlite;    // one or more statements
  const char* postgres;
  const char* sql(BackendKind kind) const { return kind == BackendKind::kPostgres ? postgres : sqlite; }
};

// Every migration, oldest first. Append only: a released migration is never edited.
const std::vector<Migration>& migrations();
// The version a freshly migrated database is at.
int latest_schema_version();

}  // namespace cellgate::state
