// SPDX-License-Identifier: BSD-3-Clause
// child_error: ChildReport records from the child → stage names and messages (parent side).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "isolation/child/run_child.h"

namespace cellgate::isolation {

struct ChildFailure {
  std::string stage;    // "pivot_root", "mount", …
  int err = 0;
  std::string message;  // "<stage>: <strerror>" (mount failures name the target)
};

// snake_case name of a stage ("unknown" for numbers this build does not know).
std::string stage_name(uint32_t stage);
// Validates one record's bytes; nullopt if the size or kind is wrong.
std::optional<child::ChildReport> decode_report(const void* data, size_t size);
// Message for an error record; `mount_target` is the failing op's target (inside path) if any.
ChildFailure describe_failure(const child::ChildReport& report, const std::string& mount_target);

}  // namespace cellgate::isolation
