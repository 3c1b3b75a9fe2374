// SPDX-License-Identifier: BSD-3-Clause
// time_format: the timestamps Jupyter clients parse.
#include "common/time_format.h"

#include <fmt/core.h>

namespace cellgate::common {

namespace {

void put_digits(char* out, int64_t value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

}  // namespace

std::string iso8601(SystemTime t) {
  using namespace std::chrono;
  // The civil calendar of <chrono> rather than gmtime_r and fmt: the journal's writer formats two
  // per execute, and the io thread one per message the gateway originates.
  const auto us = time_point_cast<microseconds>(t);
  const auto day = floor<days>(us);
  const year_month_day ymd{day};
  const hh_mm_ss<microseconds> tod{us - day};
  const int y = static_cast<int>(ymd.year());
  if (y < 0 || y > 9999)
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", y, static_cast<unsigned>(ymd.month()),
                       static_cast<unsigned>(ymd.day()), tod.hours().count(), tod.minutes().count(),
                       tod.seconds().count(), tod.subseconds().count());
  std::string s(27, '\0');  // YYYY-MM-DDTHH:MM:SS.ffffffZ
  char* p = s.data();
  put_digits(p, y, 4);
  p[4] = '-';
  put_digits(p + 5, static_cast<unsigned>(ymd.month()), 2);
  p[7] = '-';
  put_digits(p + 8, static_cast<unsigned>(ymd.day()), 2);
  p[10] = 'T';
  put_digits(p + 11, tod.hours().count(), 2);
  p[13] = ':';
  put_digits(p + 14, tod.minutes().count(), 2);
  p[16] = ':';
  put_digits(p + 17, tod.seconds().count(), 2);
  p[19] = '.';
  put_digits(p + 20, tod.subseconds().count(), 6);
  p[26] = 'Z';
  return s;
}

std::string iso8601_now() { return iso8601(std::chrono::system_clock::now()); }

}  // namespace cellgate::common
