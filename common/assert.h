// SPDX-License-Identifier: BSD-3-Clause
// assert: invariants that abort with file:line, on in every build type.
#pragma once

#include <cstdio>
#include <cstdlib>

#define CELLGATE_ASSERT(cond)                                                          \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "assertion failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
