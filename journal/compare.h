// SPDX-License-Identifier: BSD-3-Clause
// compare: whether a re-run cell gave what the journal recorded. Outputs are reduced to what a reader
// would call "the same result": text after a documented normalisation, images by their hash.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cellgate::journal {

// Text as compared: "\r\n" becomes "\n", trailing blanks of each line go, and what differs from run to
// run without the result differing is replaced by a placeholder, in this order:
//   ISO 8601 date-times and dates (2026-12-03T15:30:46.123Z, 2026-12-03 15:30) → <datetime>
//   clock times (15:30:46, 15:30:46.123)                                      → <time>
//   UUIDs                                                                      → <uuid>
//   memory addresses (0x7f3a12bc4d50: four or more hex digits)                → 0x<addr>
//   IPython's cell file names (/tmp/ipykernel_1234/5678.py)                    → /tmp/ipykernel_<pid>/<cell>.py
//   durations (1.5 s, 230 ms, 12.3 µs, 4 ns, "Wall time: 2.1 s")               → <duration>
std::string normalise_text(const std::string& text);

// One output as compared: "stream stdout\n<text>", "error NameError: <evalue>" (tracebacks carry file
// paths and line numbers: not compared), "execute_result|display_data" with each MIME type's value
// (image/* and other binary types as "sha256:<hex>" of the base64 text, text types normalised).
// Accepts the journal's nbformat outputs ("output_type") and the agent API's ("type"). clear_output,
// update_display_data and empty streams are left out.
std::vector<std::string> output_fingerprints(const nlohmann::json& outputs);

struct CellComparison {
  bool match = false;
  std::string recorded, reproduced;  // the first differing output of each side ("" when absent)
};
CellComparison compare_outputs(const nlohmann::json& recorded, const nlohmann::json& reproduced);

}  // namespace cellgate::journal
