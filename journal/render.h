// SPDX-License-Identifier: BSD-3-Clause
// render: a journal as its readers see it: JSON entries for the API, and an nbformat 4 notebook (a code
// cell per execution, a markdown cell per restart) that JupyterLab opens as it is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "state/journal_records.h"

namespace cellgate::journal {

// Reads an output the writer put in the object store, by its hash.
using BlobReader = std::function<common::Result<std::string>(const std::string& sha256)>;

// The outputs column as nbformat 4 outputs: streams of one name merged, clear_output and
// update_display_data applied, and every output made to fit the schema (what does not fit becomes a
// stderr note saying so). bytes, if set, grows by the outputs' size.
nlohmann::json nbformat_outputs(const std::string& outputs_column, const BlobReader& read, size_t* bytes = nullptr);

// One entry for GET .../journal.
nlohmann::json entry_json(const state::JournalEntryRow& entry, const BlobReader& read, size_t* bytes = nullptr);

// GET .../journal: the journal and its entries, stopping once budget bytes of them are out ("next" then
// names the seq to ask for with ?since=).
nlohmann::json journal_json(const state::JournalRow& journal, const std::vector<state::JournalEntryRow>& entries,
                            const BlobReader& read, size_t budget);

struct NotebookKernel {
  std::string display_name;  // the kernelspec's, when it still exists
  std::string language;
};
// GET .../journal.ipynb: nbformat 4.5. budget as above: the rest is named in a last markdown cell.
nlohmann::json journal_notebook(const state::JournalRow& journal, const NotebookKernel& kernel,
                                const std::vector<state::JournalEntryRow>& entries, const BlobReader& read,
                                size_t budget);

}  // namespace cellgate::journal
