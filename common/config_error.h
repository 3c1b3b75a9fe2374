// SPDX-License-Identifier: BSD-3-Clause
// config_error: the one exception of start-up: a configuration the process cannot run with.
#pragma once

#include <stdexcept>

namespace cellgate::common {

// Thrown for any configuration problem, only while starting; main prints what() on one line and exits 2.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace cellgate::common
