// SPDX-License-Identifier: BSD-3-Clause
// schema: the ordered list of migrations that builds cellgate.db.
#include "state/schema.h"

namespace cellgate::state {

// Owners are user names without a foreign key to users: the implicit single-token user "default" has no
// row, and history (kernels, audit) must survive a user's removal. Times are iso8601 UTC text.
const std::vector<Migration>& migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, R"sql(
CREATE TABLE users (
  name            TEXT PRIMARY KEY NOT NULL,
  admin           INTEGER NOT NULL DEFAULT 0,
  token_hash      TEXT NOT NULL UNIQUE,
  max_kernels     INTEGER,
  memory_bytes    INTEGER,
  cpus            REAL,
  pids            INTEGER,
  workspace_bytes INTEGER,
  workspace_files INTEGER,
  exec_timeout_s  INTEGER,
  created         TEXT NOT NULL
);
CREATE TABLE kernels (
  id               TEXT PRIMARY KEY NOT NULL,
  owner            TEXT NOT NULL,
  kernelspec       TEXT NOT NULL,
  workspace        TEXT NOT NULL,
  runtime_dir      TEXT NOT NULL,
  helper_pid       INTEGER NOT NULL DEFAULT 0,
  jail_status_file TEXT NOT NULL DEFAULT '',
  created          TEXT NOT NULL,
  state            TEXT NOT NULL
);
CREATE TABLE sessions (
  id        TEXT PRIMARY KEY NOT NULL,
  owner     TEXT NOT NULL,
  path      TEXT NOT NULL,
  name      TEXT NOT NULL,
  type      TEXT NOT NULL,
  kernel_id TEXT NOT NULL REFERENCES kernels(id) ON DELETE CASCADE
);
CREATE TABLE workspaces (
  owner     TEXT NOT NULL,
  name      TEXT NOT NULL,
  created   TEXT NOT NULL,
  ephemeral INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (owner, name)
);
CREATE TABLE snapshots (
  owner       TEXT NOT NULL,
  workspace   TEXT NOT NULL,
  snapshot_id TEXT NOT NULL,
  label       TEXT NOT NULL DEFAULT '',
  created     TEXT NOT NULL,
  auto        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (owner, workspace, snapshot_id),
  FOREIGN KEY (owner, workspace) REFERENCES workspaces(owner, name) ON DELETE CASCADE
);
CREATE TABLE audit_log (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  time        TEXT NOT NULL,
  user        TEXT NOT NULL,
  action      TEXT NOT NULL,
  object_kind TEXT NOT NULL,
  object_id   TEXT NOT NULL,
  detail      TEXT NOT NULL,
  result      TEXT NOT NULL
);
-- Append-only: the file's owner can still edit it with sqlite3, but the gateway cannot by mistake.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
  BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
  BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
)sql"},
      {2, R"sql(
CREATE INDEX kernels_by_owner ON kernels(owner);
CREATE INDEX sessions_by_owner ON sessions(owner);
CREATE INDEX sessions_by_kernel ON sessions(kernel_id);
CREATE INDEX audit_log_by_user ON audit_log(user, seq);
)sql"},
      // The snapshot index: who made each snapshot (kernel and execution, or a request), over which parent,
      // what it changed, and its size, so listings come from here rather than from every manifest.
      {3, R"sql(
ALTER TABLE users ADD COLUMN max_connections INTEGER;
ALTER TABLE snapshots ADD COLUMN created_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN parent TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN kernel_id TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN execution_count INTEGER;
ALTER TABLE snapshots ADD COLUMN added INTEGER;
ALTER TABLE snapshots ADD COLUMN changed INTEGER;
ALTER TABLE snapshots ADD COLUMN removed INTEGER;
ALTER TABLE snapshots ADD COLUMN entries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;
)sql"},
  };
  return kMigrations;
}

int latest_schema_version() { return migrations().back().version; }

}  // namespace cellgate::state
