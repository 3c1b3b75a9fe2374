// SPDX-License-Identifier: BSD-3-Clause
// notebook_file: reading and writing nbformat 4 notebooks (.ipynb). Shared by `cellgate run`,
// seed notebooks and notebook-http. The document is kept as JSON so that fields we do not know
// (widgets, tags, attachments) survive a read-modify-write.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace cellgate::launcher {

struct NotebookCell {
  std::size_t index = 0;  // position in doc["cells"]
  std::string source;     // the cell's text, multi-line sources joined
};

struct Notebook {
  nlohmann::json doc;

  // metadata.kernelspec.name, or "" when absent.
  std::string kernel_name() const;
  // The notebook's language: metadata.kernelspec.language, else metadata.language_info.name, lower-case;
  // "" when it declares neither.
  std::string language() const;
  // Code cells in order, with their index into doc["cells"].
  std::vector<NotebookCell> code_cells() const;
  // Replaces cell `index`'s outputs and execution_count (null when `count` is 0).
  void set_outputs(std::size_t index, nlohmann::json outputs, int count);
};

// Parses and checks the nbformat 4 structure this code relies on: an object with nbformat 4,
// a cells array whose entries have a known cell_type and a string (or list of strings) source.
// Errors (kBadRequest) say which cell is wrong and why.
common::Result<Notebook> parse_notebook(std::string_view text);
// Reads and parses a file; size bounded (64 MiB). Errors name the path.
common::Result<Notebook> load_notebook(const std::string& path);
// Writes `nb` (indent 1, as Jupyter does) to a temp file beside `path`, fsyncs and renames.
common::Status save_notebook(const Notebook& nb, const std::string& path);

// A cell's "source" as one string: nbformat allows a string or a list of lines.
std::string cell_source(const nlohmann::json& cell);

}  // namespace cellgate::launcher
