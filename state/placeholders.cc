// SPDX-License-Identifier: BSD-3-Clause
// placeholders: rewrites the `?` parameters our SQL is written with into PostgreSQL's `$1…$n`.
#include "state/placeholders.h"

namespace cellgate::state {

NumberedSql number_placeholders(std::string_view sql) {
  NumberedSql out;
  out.sql.reserve(sql.size() + 16);
  size_t i = 0;
  // Copies sql[i] up to and including the closing `close` (a doubled quote inside continues the run).
  auto copy_quoted = [&](char close) {
    out.sql += sql[i++];
    while (i < sql.size()) {
      char c = sql[i++];
      out.sql += c;
      if (c == close) {
        if (i < sql.size() && sql[i] == close) {
          out.sql += sql[i++];
          continue;
        }
        return;
      }
    }
  };
  while (i < sql.size()) {
    const char c = sql[i];
    const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
    if (c == '\'' || c == '"') {
      copy_quoted(c);
    } else if (c == '-' && next == '-') {
      size_t end = sql.find('\n', i);
      end = end == std::string_view::npos ? sql.size() : end;
      out.sql.append(sql.substr(i, end - i));
      i = end;
    } else if (c == '/' && next == '*') {
      size_t end = sql.find("*/", i + 2);
      end = end == std::string_view::npos ? sql.size() : end + 2;
      out.sql.append(sql.substr(i, end - i));
      i = end;
    } else if (c == '?') {
      out.sql += '$';
      out.sql += std::to_string(++out.params);
      ++i;
    } else {
      out.sql += c;
      ++i;
    }
  }
  return out;
}

}  // namespace cellgate::state
