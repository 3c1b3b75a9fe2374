// SPDX-License-Identifier: BSD-3-Clause
// option_value: the value of a subcommand's `--flag=value` or `--flag value` argument.
#pragma once

#include <string>

#include "common/config_error.h"

namespace cellgate::cli {

// argv[i] is `arg`, an option that takes a value: `--flag=value` leaves `--flag` in arg and returns
// value; `--flag value` returns argv[i + 1] and steps i over it. A missing value is a ConfigError
// (one line: "--flag needs a value").
inline std::string option_value(std::string& arg, int argc, char** argv, int& i) {
  if (auto eq = arg.find('='); eq != std::string::npos) {
    std::string value = arg.substr(eq + 1);
    arg.resize(eq);
    return value;
  }
  if (i + 1 >= argc) throw common::ConfigError(arg + " needs a value");
  return argv[++i];
}

}  // namespace cellgate::cli
