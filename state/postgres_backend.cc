// SPDX-License-Identifier: BSD-3-Clause
// postgres_backend: the state in PostgreSQL (libpq), for nodes that share it (docs/cluster.md).
#include "state/postgres_backend.h"

#include <libpq-fe.h>

#include <cstdlib>

#include <fmt/core.h>

#include "state/placeholders.h"

namespace cellgate::state {

using common::Errc;
using common::make_error;
using common::Result;
using common::Status;

namespace {

class PostgresCursor final : public Cursor {
 public:
  PostgresCursor(PostgresBackend& backend, NumberedSql sql)
      : backend_(backend), sql_(std::move(sql)), params_(static_cast<size_t>(sql_.params)) {}

  Status bind_int(int index, int64_t value) override { return set(index, std::to_string(value)); }
  // fmt's shortest form reads back as the same double (float8in is exact for it).
  Status bind_double(int index, double value) override { return set(index, fmt::format("{}", value)); }
  Status bind_text(int index, std::string_view value) override { return set(index, std::string(value)); }
  Status bind_null(int index) override { return set(index, std::nullopt); }

  Result<bool> step() override {
    if (!result_) {
      auto r = backend_.run(sql_.sql, params_);
      if (!r) return r.error();
      result_ = std::move(r.value());
      rows_ = PQntuples(result_.get());
      row_ = 0;
    } else {
      ++row_;
    }
    if (row_ < rows_) return true;
    result_.reset();  // as SQLite: stepping again runs the statement again
    return false;
  }

  void reset() override {
    result_.reset();
    for (auto& p : params_) p.reset();
  }

  bool is_null(int column) const override { return !result_ || PQgetisnull(result_.get(), row_, column); }
  int64_t get_int(int column) const override {
    const char* v = value(column);
    return v ? std::strtoll(v, nullptr, 10) : 0;
  }
  double get_double(int column) const override {
    const char* v = value(column);
    return v ? std::strtod(v, nullptr) : 0.0;
  }
  std::string get_text(int column) const override {
    const char* v = value(column);
    if (!v) return {};
    return std::string(v, static_cast<size_t>(PQgetlength(result_.get(), row_, column)));
  }

 private:
  Status set(int index, std::optional<std::string> value) {
    if (index < 1 || index > sql_.params) return make_error(Errc::kInternal, "column index out of range");
    params_[static_cast<size_t>(index - 1)] = std::move(value);
    return common::ok();
  }
  const char* value(int column) const {
    if (!result_ || column < 0 || column >= PQnfields(result_.get()) || PQgetisnull(result_.get(), row_, column))
      return nullptr;
    return PQgetvalue(result_.get(), row_, column);
  }

  PostgresBackend& backend_;
  NumberedSql sql_;
  PgParams params_;
  PgResult result_;
  int rows_ = 0;
  int row_ = 0;
};

}  // namespace

Result<std::unique_ptr<PostgresBackend>> PostgresBackend::connect(const std::string& url,
                                                                  const DatabaseOptions& options) {
  auto link = PostgresLink::open(url, options);
  if (!link) return link.error();
  return std::unique_ptr<PostgresBackend>(new PostgresBackend(std::move(link.value())));
}

std::optional<uint64_t> PostgresBackend::tx_generation() const {
  return in_tx_ ? std::optional<uint64_t>(tx_generation_) : std::nullopt;
}

Status PostgresBackend::exec(std::string_view sql) {
  auto r = link_->query(std::string(sql), nullptr, tx_generation());
  if (!r) return r.error();
  return common::ok();
}

Result<std::unique_ptr<Cursor>> PostgresBackend::prepare(std::string_view sql) {
  return std::unique_ptr<Cursor>(std::make_unique<PostgresCursor>(*this, number_placeholders(sql)));
}

Result<PgResult> PostgresBackend::run(const std::string& sql, const PgParams& params) {
  auto r = link_->query(sql, &params, tx_generation());
  if (!r) return r.error();
  const char* tuples = PQcmdTuples(r.value().get());
  changes_ = tuples && *tuples ? std::strtoll(tuples, nullptr, 10) : 0;
  return r;
}

Status PostgresBackend::begin() {
  CELLGATE_ASSERT(!in_tx_);  // transactions do not nest
  auto r = link_->query("BEGIN", nullptr);
  if (!r) return r.error();
  in_tx_ = true;
  tx_generation_ = link_->generation();
  return common::ok();
}

Status PostgresBackend::commit() {
  CELLGATE_ASSERT(in_tx_);
  auto r = link_->query("COMMIT", nullptr, tx_generation());
  // Either way the transaction is over: a COMMIT that fails rolls back (or its connection is gone).
  in_tx_ = false;
  if (!r) return r.error();
  return common::ok();
}

void PostgresBackend::rollback() {
  if (!in_tx_) return;
  in_tx_ = false;
  (void)link_->query("ROLLBACK", nullptr, tx_generation_);
}

Status PostgresBackend::lock(std::string_view key) {
  PgParams params{std::string(key)};
  auto r = link_->query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &params, tx_generation());
  if (!r) return r.error();
  return common::ok();
}

}  // namespace cellgate::state
