// SPDX-License-Identifier: BSD-3-Clause
// postgres_backend: the state in PostgreSQL (libpq), for nodes that share it (docs/cluster.md).
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "state/backend.h"
#include "state/postgres_link.h"

namespace cellgate::state {

// Statements run through a PostgresLink (deadlines, reconnects). Parameters and results travel as
// text; the server infers each parameter's type from its use. A transaction is tied to the
// connection it began on: once that is lost, its statements fail until it ends.
class PostgresBackend final : public Backend {
 public:
  static common::Result<std::unique_ptr<PostgresBackend>> connect(const std::string& url,
                                                                  const DatabaseOptions& options);

  BackendKind kind() const override { return BackendKind::kPostgres; }
  const std::string& name() const override { return link_->name(); }
  common::Status exec(std::string_view sql) override;
  common::Result<std::unique_ptr<Cursor>> prepare(std::string_view sql) override;
  int64_t changes() const override { return changes_; }
  common::Status begin() override;
  common::Status commit() override;
  void rollback() override;
  common::Status lock(std::string_view key) override;

  // For the cursors: runs sql ($n placeholders) with params, counting the rows it changed.
  common::Result<PgResult> run(const std::string& sql, const PgParams& params);

 private:
  explicit PostgresBackend(std::unique_ptr<PostgresLink> link) : link_(std::move(link)) {}
  std::optional<uint64_t> tx_generation() const;

  std::unique_ptr<PostgresLink> link_;
  bool in_tx_ = false;
  uint64_t tx_generation_ = 0;
  int64_t changes_ = 0;
};

}  // namespace cellgate::state
