// SPDX-License-Identifier: BSD-3-Clause
// artifact_records: the artifacts table.
#include "state/artifact_records.h"

#include "state/rows.h"

namespace cellgate::state {

using common::Result;
using common::Status;

namespace {

constexpr const char* kColumns =
    "id, owner, name, workspace, path, sha256, size, media_type, published_by, created, kernel_id, execution_count, "
    "snapshot";

ArtifactRow read_artifact(const Statement& st) {
  ArtifactRow a;
  a.id = st.column_text(0);
  a.owner = st.column_text(1);
  a.name = st.column_text(2);
  a.workspace = st.column_text(3);
  a.path = st.column_text(4);
  a.sha256 = st.column_text(5);
  a.size = st.column_int(6);
  a.media_type = st.column_text(7);
  a.published_by = st.column_text(8);
  a.created = st.column_text(9);
  a.kernel_id = st.column_text(10);
  a.execution_count = st.column_opt_int(11);
  a.snapshot = st.column_text(12);
  return a;
}

}  // namespace

Status insert_artifact(Database& db, const ArtifactRow& a) {
  auto st = db.prepare(std::string("INSERT INTO artifacts (") + kColumns +
                       ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!st) return st.error();
  st->bind(1, a.id).bind(2, a.owner).bind(3, a.name).bind(4, a.workspace).bind(5, a.path).bind(6, a.sha256);
  st->bind(7, a.size).bind(8, a.media_type).bind(9, a.published_by).bind(10, a.created).bind(11, a.kernel_id);
  st->bind(12, a.execution_count).bind(13, a.snapshot);
  return st->run();
}

Result<ArtifactRow> get_artifact(Database& db, const std::string& id) {
  auto st = db.prepare(std::string("SELECT ") + kColumns + " FROM artifacts WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  return first<ArtifactRow>(*st, read_artifact, "no artifact " + id);
}

Result<std::vector<ArtifactRow>> list_artifacts(Database& db, const std::optional<std::string>& owner) {
  auto st = db.prepare(std::string("SELECT ") + kColumns + " FROM artifacts" + (owner ? " WHERE owner = ?" : "") +
                       " ORDER BY created DESC, id");
  if (!st) return st.error();
  if (owner) st->bind(1, *owner);
  return collect<ArtifactRow>(*st, read_artifact);
}

Result<int64_t> count_artifacts(Database& db, const std::string& owner) {
  auto st = db.prepare("SELECT count(*) FROM artifacts WHERE owner = ?");
  if (!st) return st.error();
  st->bind(1, owner);
  return first<int64_t>(*st, [](const Statement& s) { return s.column_int(0); }, "no count");
}

Status delete_artifact(Database& db, const std::string& id) {
  auto st = db.prepare("DELETE FROM artifacts WHERE id = ?");
  if (!st) return st.error();
  st->bind(1, id);
  return change_one(db, *st, "no artifact " + id);
}

}  // namespace cellgate::state
