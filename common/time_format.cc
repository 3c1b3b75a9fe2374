// SPDX-License-Identifier: BSD-3-Clause
// time_format: the timestamps Jupyter clients parse.
#include "common/time_format.h"

#include <ctime>

#include <fmt/core.h>

namespace cellgate::common {

std::string iso8601(SystemTime t) {
  using namespace std::chrono;
  auto us = duration_cast<microseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  struct tm tm {};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

std::string iso8601_now() { return iso8601(std::chrono::system_clock::now()); }

}  // namespace cellgate::common
