// SPDX-License-Identifier: BSD-3-Clause
// placeholders: rewrites the `?` parameters our SQL is written with into PostgreSQL's `$1…$n`.
#pragma once

#include <string>
#include <string_view>

namespace cellgate::state {

struct NumberedSql {
  std::string sql;  // with $1…$n
  int params = 0;   // n
};

// Every `?` outside a 'string literal' (with '' escapes), a "quoted identifier", a -- comment or a
// /* comment */ becomes $1, $2, … in order. Our statements are constants in the code, never client
// text, so this is no parser of hostile input; it only has to be right for every SQL we write.
NumberedSql number_placeholders(std::string_view sql);

}  // namespace cellgate::state
