// SPDX-License-Identifier: BSD-3-Clause
// schema: the ordered list of migrations that builds the state database, in each backend's dialect.
#include "state/schema.h"

namespace cellgate::state {

// Owners are user names without a foreign key to users: the implicit single-token user "default" has no
// row, and history (kernels, audit) must survive a user's removal. Times are iso8601 UTC text.
//
// PostgreSQL's words for SQLite's: BIGINT for INTEGER (SQLite's are 64-bit), DOUBLE PRECISION for REAL,
// INTEGER for 0/1 flags, an identity column for AUTOINCREMENT, and an explicit `rowid` identity on the
// tables listed in insertion order (SQLite has an implicit one). Every text column is COLLATE "C", so
// that ORDER BY sorts as SQLite's binary order does whatever the server's locale. `user` is reserved
// in PostgreSQL, so the code quotes it in both.
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
)sql",
       R"sql(
CREATE TABLE users (
  name            TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  admin           INTEGER NOT NULL DEFAULT 0,
  token_hash      TEXT COLLATE "C" NOT NULL UNIQUE,
  max_kernels     BIGINT,
  memory_bytes    BIGINT,
  cpus            DOUBLE PRECISION,
  pids            BIGINT,
  workspace_bytes BIGINT,
  workspace_files BIGINT,
  exec_timeout_s  BIGINT,
  created         TEXT COLLATE "C" NOT NULL
);
CREATE TABLE kernels (
  rowid            BIGINT GENERATED ALWAYS AS IDENTITY,
  id               TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  owner            TEXT COLLATE "C" NOT NULL,
  kernelspec       TEXT COLLATE "C" NOT NULL,
  workspace        TEXT COLLATE "C" NOT NULL,
  runtime_dir      TEXT COLLATE "C" NOT NULL,
  helper_pid       BIGINT NOT NULL DEFAULT 0,
  jail_status_file TEXT COLLATE "C" NOT NULL DEFAULT '',
  created          TEXT COLLATE "C" NOT NULL,
  state            TEXT COLLATE "C" NOT NULL
);
CREATE TABLE sessions (
  rowid     BIGINT GENERATED ALWAYS AS IDENTITY,
  id        TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  owner     TEXT COLLATE "C" NOT NULL,
  path      TEXT COLLATE "C" NOT NULL,
  name      TEXT COLLATE "C" NOT NULL,
  type      TEXT COLLATE "C" NOT NULL,
  kernel_id TEXT COLLATE "C" NOT NULL REFERENCES kernels(id) ON DELETE CASCADE
);
CREATE TABLE workspaces (
  owner     TEXT COLLATE "C" NOT NULL,
  name      TEXT COLLATE "C" NOT NULL,
  created   TEXT COLLATE "C" NOT NULL,
  ephemeral INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (owner, name)
);
CREATE TABLE snapshots (
  owner       TEXT COLLATE "C" NOT NULL,
  workspace   TEXT COLLATE "C" NOT NULL,
  snapshot_id TEXT COLLATE "C" NOT NULL,
  label       TEXT COLLATE "C" NOT NULL DEFAULT '',
  created     TEXT COLLATE "C" NOT NULL,
  auto        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (owner, workspace, snapshot_id),
  FOREIGN KEY (owner, workspace) REFERENCES workspaces(owner, name) ON DELETE CASCADE
);
CREATE TABLE audit_log (
  seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  time        TEXT COLLATE "C" NOT NULL,
  "user"      TEXT COLLATE "C" NOT NULL,
  action      TEXT COLLATE "C" NOT NULL,
  object_kind TEXT COLLATE "C" NOT NULL,
  object_id   TEXT COLLATE "C" NOT NULL,
  detail      TEXT COLLATE "C" NOT NULL,
  result      TEXT COLLATE "C" NOT NULL
);
-- Append-only for the gateway's role as for anyone's (the table's owner could drop the trigger, not
-- bypass it by mistake); TRUNCATE too, which row triggers do not see.
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN RAISE EXCEPTION 'audit_log is append-only'; END $$;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
)sql"},
      {2, R"sql(
CREATE INDEX kernels_by_owner ON kernels(owner);
CREATE INDEX sessions_by_owner ON sessions(owner);
CREATE INDEX sessions_by_kernel ON sessions(kernel_id);
CREATE INDEX audit_log_by_user ON audit_log(user, seq);
)sql",
       R"sql(
CREATE INDEX kernels_by_owner ON kernels(owner);
CREATE INDEX sessions_by_owner ON sessions(owner);
CREATE INDEX sessions_by_kernel ON sessions(kernel_id);
CREATE INDEX audit_log_by_user ON audit_log("user", seq);
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
)sql",
       R"sql(
ALTER TABLE users ADD COLUMN max_connections BIGINT;
ALTER TABLE snapshots ADD COLUMN created_ns BIGINT NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN parent TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN kernel_id TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN execution_count BIGINT;
ALTER TABLE snapshots ADD COLUMN added BIGINT;
ALTER TABLE snapshots ADD COLUMN changed BIGINT;
ALTER TABLE snapshots ADD COLUMN removed BIGINT;
ALTER TABLE snapshots ADD COLUMN entries BIGINT NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
)sql"},
      // The node a kernel runs on (docs/cluster.md); '' for a kernel recorded before nodes existed,
      // which is the one machine's.
      {4, R"sql(
ALTER TABLE kernels ADD COLUMN node TEXT NOT NULL DEFAULT '';
CREATE INDEX kernels_by_node ON kernels(node);
)sql",
       R"sql(
ALTER TABLE kernels ADD COLUMN node TEXT COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX kernels_by_node ON kernels(node);
)sql"},
      // Membership and placement (docs/cluster.md): one row per node, renewed against the database
      // server's clock (times are its milliseconds since the epoch, so no node's clock ever matters);
      // why a kernel is dead and the memory placement committed for it; the node holding a workspace.
      {5, R"sql(
CREATE TABLE nodes (
  id           TEXT PRIMARY KEY NOT NULL,
  address      TEXT NOT NULL,
  version      TEXT NOT NULL,
  incarnation  INTEGER NOT NULL,
  started_ms   INTEGER NOT NULL,
  heartbeat_ms INTEGER NOT NULL,
  memory_total INTEGER NOT NULL DEFAULT 0,
  memory_free  INTEGER NOT NULL DEFAULT 0,
  kernels      INTEGER NOT NULL DEFAULT 0,
  max_kernels  INTEGER NOT NULL DEFAULT 0,
  state        TEXT NOT NULL
);
ALTER TABLE kernels ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE kernels ADD COLUMN memory_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN node TEXT NOT NULL DEFAULT '';
)sql",
       R"sql(
CREATE TABLE nodes (
  id           TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  address      TEXT COLLATE "C" NOT NULL,
  version      TEXT COLLATE "C" NOT NULL,
  incarnation  BIGINT NOT NULL,
  started_ms   BIGINT NOT NULL,
  heartbeat_ms BIGINT NOT NULL,
  memory_total BIGINT NOT NULL DEFAULT 0,
  memory_free  BIGINT NOT NULL DEFAULT 0,
  kernels      BIGINT NOT NULL DEFAULT 0,
  max_kernels  BIGINT NOT NULL DEFAULT 0,
  state        TEXT COLLATE "C" NOT NULL
);
ALTER TABLE kernels ADD COLUMN reason TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE kernels ADD COLUMN memory_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE workspaces ADD COLUMN node TEXT COLLATE "C" NOT NULL DEFAULT '';
-- clock_timestamp(), not now(): the time of the statement, not of its transaction's start.
CREATE FUNCTION cellgate_now_ms() RETURNS BIGINT LANGUAGE sql VOLATILE
  AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT $$;
)sql"},
      // Network policies (egress/policy.h, canonical JSON): the most a user's kernels may have (NULL:
      // the kernelspec's), and each kernel's own ('' = none), which a restarted gateway gives back to
      // the egress proxy.
      {6, R"sql(
ALTER TABLE users ADD COLUMN network TEXT;
ALTER TABLE kernels ADD COLUMN network TEXT NOT NULL DEFAULT '';
)sql",
       R"sql(
ALTER TABLE users ADD COLUMN network TEXT COLLATE "C";
ALTER TABLE kernels ADD COLUMN network TEXT COLLATE "C" NOT NULL DEFAULT '';
)sql"},
      // A per-user quota on what the user's snapshots hold in the object store.
      {7, R"sql(
ALTER TABLE users ADD COLUMN store_bytes INTEGER;
)sql",
       R"sql(
ALTER TABLE users ADD COLUMN store_bytes BIGINT;
)sql"},
      // The execution journal (journal/): one journal per kernel, outliving it until retention drops it
      // (no foreign key to kernels), and its entries: executions and the kernel's restarts. Bytes and age
      // bound each owner's entries (users' journal_bytes, journal_days override the gateway's defaults).
      {8, R"sql(
ALTER TABLE users ADD COLUMN journal_bytes INTEGER;
ALTER TABLE users ADD COLUMN journal_days INTEGER;
CREATE TABLE journals (
  kernel_id  TEXT PRIMARY KEY NOT NULL,
  owner      TEXT NOT NULL,
  kernelspec TEXT NOT NULL,
  workspace  TEXT NOT NULL,
  created    TEXT NOT NULL,
  deleted    TEXT NOT NULL DEFAULT '',
  baseline   TEXT NOT NULL DEFAULT '',
  note       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX journals_by_owner ON journals(owner);
CREATE TABLE journal_entries (
  kernel_id       TEXT NOT NULL REFERENCES journals(kernel_id) ON DELETE CASCADE,
  seq             INTEGER NOT NULL,
  owner           TEXT NOT NULL,
  kind            TEXT NOT NULL,
  msg_id          TEXT NOT NULL DEFAULT '',
  run_by          TEXT NOT NULL DEFAULT '',
  client          TEXT NOT NULL DEFAULT '',
  session         TEXT NOT NULL DEFAULT '',
  silent          INTEGER NOT NULL DEFAULT 0,
  code            TEXT NOT NULL DEFAULT '',
  started         TEXT NOT NULL,
  ended           TEXT NOT NULL DEFAULT '',
  status          TEXT NOT NULL,
  execution_count INTEGER,
  outputs         TEXT NOT NULL DEFAULT '[]',
  snapshot_before TEXT NOT NULL DEFAULT '',
  snapshot_after  TEXT NOT NULL DEFAULT '',
  bytes           INTEGER NOT NULL DEFAULT 0,
  blobs           TEXT NOT NULL DEFAULT '',
  detail          TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY (kernel_id, seq)
);
CREATE INDEX journal_entries_by_owner ON journal_entries(owner, started);
)sql",
       R"sql(
ALTER TABLE users ADD COLUMN journal_bytes BIGINT;
ALTER TABLE users ADD COLUMN journal_days BIGINT;
CREATE TABLE journals (
  kernel_id  TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  owner      TEXT COLLATE "C" NOT NULL,
  kernelspec TEXT COLLATE "C" NOT NULL,
  workspace  TEXT COLLATE "C" NOT NULL,
  created    TEXT COLLATE "C" NOT NULL,
  deleted    TEXT COLLATE "C" NOT NULL DEFAULT '',
  baseline   TEXT COLLATE "C" NOT NULL DEFAULT '',
  note       TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX journals_by_owner ON journals(owner);
CREATE TABLE journal_entries (
  kernel_id       TEXT COLLATE "C" NOT NULL REFERENCES journals(kernel_id) ON DELETE CASCADE,
  seq             BIGINT NOT NULL,
  owner           TEXT COLLATE "C" NOT NULL,
  kind            TEXT COLLATE "C" NOT NULL,
  msg_id          TEXT COLLATE "C" NOT NULL DEFAULT '',
  run_by          TEXT COLLATE "C" NOT NULL DEFAULT '',
  client          TEXT COLLATE "C" NOT NULL DEFAULT '',
  session         TEXT COLLATE "C" NOT NULL DEFAULT '',
  silent          INTEGER NOT NULL DEFAULT 0,
  code            TEXT COLLATE "C" NOT NULL DEFAULT '',
  started         TEXT COLLATE "C" NOT NULL,
  ended           TEXT COLLATE "C" NOT NULL DEFAULT '',
  status          TEXT COLLATE "C" NOT NULL,
  execution_count BIGINT,
  outputs         TEXT COLLATE "C" NOT NULL DEFAULT '[]',
  snapshot_before TEXT COLLATE "C" NOT NULL DEFAULT '',
  snapshot_after  TEXT COLLATE "C" NOT NULL DEFAULT '',
  bytes           BIGINT NOT NULL DEFAULT 0,
  blobs           TEXT COLLATE "C" NOT NULL DEFAULT '',
  detail          TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  PRIMARY KEY (kernel_id, seq)
);
CREATE INDEX journal_entries_by_owner ON journal_entries(owner, started);
)sql"},
      // A journal's baseline snapshot is charged to its owner's journal bytes, as its entries are.
      {9, R"sql(
ALTER TABLE journals ADD COLUMN baseline_bytes INTEGER NOT NULL DEFAULT 0;
)sql",
       R"sql(
ALTER TABLE journals ADD COLUMN baseline_bytes BIGINT NOT NULL DEFAULT 0;
)sql"},
      // Published artifacts (gateway/artifact_store.h): immutable files out of a workspace, whose bytes are
      // a store object pinned under <data>/pins/artifact/<owner>/<id>. No foreign key to workspaces: an
      // artifact outlives the workspace it came from, and is deleted only on request.
      {10, R"sql(
CREATE TABLE artifacts (
  id              TEXT PRIMARY KEY NOT NULL,
  owner           TEXT NOT NULL,
  name            TEXT NOT NULL,
  workspace       TEXT NOT NULL,
  path            TEXT NOT NULL,
  sha256          TEXT NOT NULL,
  size            INTEGER NOT NULL,
  media_type      TEXT NOT NULL,
  published_by    TEXT NOT NULL,
  created         TEXT NOT NULL,
  kernel_id       TEXT NOT NULL DEFAULT '',
  execution_count INTEGER,
  snapshot        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX artifacts_by_owner ON artifacts(owner, created);
)sql",
       R"sql(
CREATE TABLE artifacts (
  id              TEXT COLLATE "C" PRIMARY KEY NOT NULL,
  owner           TEXT COLLATE "C" NOT NULL,
  name            TEXT COLLATE "C" NOT NULL,
  workspace       TEXT COLLATE "C" NOT NULL,
  path            TEXT COLLATE "C" NOT NULL,
  sha256          TEXT COLLATE "C" NOT NULL,
  size            BIGINT NOT NULL,
  media_type      TEXT COLLATE "C" NOT NULL,
  published_by    TEXT COLLATE "C" NOT NULL,
  created         TEXT COLLATE "C" NOT NULL,
  kernel_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
  execution_count BIGINT,
  snapshot        TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX artifacts_by_owner ON artifacts(owner, created);
)sql"},
  };
  return kMigrations;
}

int latest_schema_version() { return migrations().back().version; }

}  // namespace cellgate::state
