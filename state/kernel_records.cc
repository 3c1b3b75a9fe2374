// SPDX-License-Identifier: BSD-3-Clause
// kernel_records: the kernels and sessions tables, kept so a restarted gateway can re-adopt its kernels.
#include "state/kernel_records.h"

#include "state/rows.h"

namespace cellgate::state {

using common::Result;
using common::Status;

namespace {

constexpr const char* kKernelColumns =
    "id, owner, kernelspec, workspace, runtime_dir, helper_pid, jail_status_file, created, state, node, reason, "
    "memory_bytes, network";
constexpr const char* kSessionColumns = "id, owner, path, name, type, kernel_id";

KernelRecord read_kernel(const Statement& st) {
  return KernelRecord{st.column_text(0), st.column_text(1), st.column_text(2),  st.column_text(3),
                      st.column_text(4), st.column_int(5),  st.column_text(6),  st.column_text(7),
                      st.column_text(8), st.column_text(9), st.column_text(10), st.column_int(11),
                      st.column_text(12)};
}

SessionRow read_session(const Statement& st) {
  return SessionRow{st.column_text(0), st.column_text(1), st.column_text(2),
                    st.column_text(3), st.column_text(4), st.column_text(5)};
}

}  // namespace

Status insert_kernel(Database& db, const KernelRecord& k) {
  auto st = db.prepare(std::string("INSERT INTO kernels (") + kKernelColumns +
                       ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, k.id).bind(2, k.owner).bind(3, k.kernelspec).bind(4, k.workspace).bind(5, k.runtime_dir);
  st->bind(6, k.helper_pid).bind(7, k.jail_status_file).bind(8, k.created).bind(9, k.state).bind(10, k.node);
  st->bind(11, k.reason).bind(12, k.memory_bytes).bind(13, k.network);
  return st->run();
}

Result<KernelRecord> get_kernel(Database& db, const std::string& id) {
  auto st = db.prepare(std::string("SELECT ") + kKernelColumns + " FROM kernels WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  return first<KernelRecord>(*st, read_kernel, "no such kernel " + id);
}

Result<std::vector<KernelRecord>> list_kernels(Database& db, const std::optional<std::string>& owner) {
  auto st = db.prepare(std::string("SELECT ") + kKernelColumns + " FROM kernels" +
                       (owner ? " WHERE owner = ?" : "") + " ORDER BY rowid");
  if (!st) return st.error();
  if (owner) st->bind(1, *owner);
  return collect<KernelRecord>(*st, read_kernel);
}

Status set_kernel_state(Database& db, const std::string& id, const std::string& state) {
  auto st = db.prepare("UPDATE kernels SET state = ? WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, state).bind(2, id);
  return change_one(db, *st, "no such kernel " + id);
}

Status set_kernel_network(Database& db, const std::string& id, const std::string& network) {
  auto st = db.prepare("UPDATE kernels SET network = ? WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, network).bind(2, id);
  return change_one(db, *st, "no such kernel " + id);
}

Status set_kernel_dead(Database& db, const std::string& id, const std::string& reason) {
  auto st = db.prepare("UPDATE kernels SET state = 'dead', reason = ? WHERE id = ? AND state <> 'dead'");
  if (!st) return st.error();
  st->bind(1, reason).bind(2, id);
  return st->run();
}

Status confirm_placed_kernel(Database& db, const std::string& placed_id, const KernelRecord& k) {
  auto st = db.prepare(
      "UPDATE kernels SET id = ?, runtime_dir = ?, helper_pid = ?, jail_status_file = ?, state = ?, network = ? "
      "WHERE id = ? AND state = 'placing'");
  if (!st) return st.error();
  st->bind(1, k.id).bind(2, k.runtime_dir).bind(3, k.helper_pid).bind(4, k.jail_status_file).bind(5, k.state);
  st->bind(6, k.network).bind(7, placed_id);
  return change_one(db, *st, "the placed kernel " + placed_id + " is gone (its node was declared lost)");
}

Status set_kernel_helper(Database& db, const std::string& id, int64_t helper_pid, const std::string& jail_status_file) {
  auto st = db.prepare("UPDATE kernels SET helper_pid = ?, jail_status_file = ? WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, helper_pid).bind(2, jail_status_file).bind(3, id);
  return change_one(db, *st, "no such kernel " + id);
}

Status delete_kernel(Database& db, const std::string& id) {
  auto st = db.prepare("DELETE FROM kernels WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  return change_one(db, *st, "no such kernel " + id);
}

Status insert_session(Database& db, const SessionRow& s) {
  auto st = db.prepare(std::string("INSERT INTO sessions (") + kSessionColumns + ") VALUES (?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, s.id).bind(2, s.owner).bind(3, s.path).bind(4, s.name).bind(5, s.type).bind(6, s.kernel_id);
  return st->run();
}

Result<SessionRow> get_session(Database& db, const std::string& id) {
  auto st = db.prepare(std::string("SELECT ") + kSessionColumns + " FROM sessions WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  return first<SessionRow>(*st, read_session, "no such session " + id);
}

Result<std::vector<SessionRow>> list_sessions(Database& db, const std::optional<std::string>& owner) {
  auto st = db.prepare(std::string("SELECT ") + kSessionColumns + " FROM sessions" +
                       (owner ? " WHERE owner = ?" : "") + " ORDER BY rowid");
  if (!st) return st.error();
  if (owner) st->bind(1, *owner);
  return collect<SessionRow>(*st, read_session);
}

Status update_session(Database& db, const SessionRow& s) {
  auto st = db.prepare("UPDATE sessions SET path = ?, name = ?, type = ?, kernel_id = ? WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, s.path).bind(2, s.name).bind(3, s.type).bind(4, s.kernel_id).bind(5, s.id);
  return change_one(db, *st, "no such session " + s.id);
}

Status delete_session(Database& db, const std::string& id) {
  auto st = db.prepare("DELETE FROM sessions WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  return change_one(db, *st, "no such session " + id);
}

}  // namespace cellgate::state
