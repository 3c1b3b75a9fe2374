// SPDX-License-Identifier: BSD-3-Clause
// rows: the one loop that reads a statement's rows into values (every listing and lookup uses it).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

// Every row of a bound statement, each turned into a Row by read(const Statement&).
template <typename Row, typename Read>
common::Result<std::vector<Row>> collect(Statement& st, Read read) {
  std::vector<Row> rows;
  for (;;) {
    auto more = st.step();
    if (!more) return more.error();
    if (!more.value()) return rows;
    rows.push_back(read(st));
  }
}

// The first row of a bound statement, or Errc::kNotFound with not_found as the message.
template <typename Row, typename Read>
common::Result<Row> first(Statement& st, Read read, std::string not_found) {
  auto more = st.step();
  if (!more) return more.error();
  if (!more.value()) return common::make_error(common::Errc::kNotFound, std::move(not_found));
  return read(st);
}

// Runs a bound UPDATE/DELETE and turns "no row changed" into Errc::kNotFound with not_found.
inline common::Status change_one(Database& db, Statement& st, std::string not_found) {
  if (auto s = st.run(); !s) return s;
  if (db.changes() == 0) return common::make_error(common::Errc::kNotFound, std::move(not_found));
  return common::ok();
}

}  // namespace cellgate::state
