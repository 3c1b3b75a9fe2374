// SPDX-License-Identifier: BSD-3-Clause
// unified_diff: applies a unified diff to one file's text, refusing any hunk whose context does not match.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace cellgate::api {

// Applies every hunk of diff (the ---/+++ headers are optional) to text. Hunks must apply in order at
// the lines they name; when context or removed lines differ, fails with kConflict naming the hunk and
// the line. Malformed diffs: kBadRequest.
common::Result<std::string> apply_unified_diff(std::string_view text, std::string_view diff);

}  // namespace cellgate::api
