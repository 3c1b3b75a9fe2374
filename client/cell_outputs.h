// SPDX-License-Identifier: BSD-3-Clause
// cell_outputs: turns a cell's iopub messages into nbformat 4 outputs, the way nbclient does (used by
// `cellgate run`). Kept apart from the socket so that the rules can be tested message by message.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cellgate::client {

class CellOutputs {
 public:
  // Starts a new cell: outputs are cleared; display ids of earlier cells stay known, so that
  // update_display_data can reach the cell that created the display (nbclient does the same).
  // `cells` is the notebook's doc["cells"], where finished cells' outputs live; it must outlive this.
  void begin_cell(std::size_t cell_index, nlohmann::json* cells);

  // One iopub message of this cell (already filtered by parent msg_id). Returns false for types that
  // carry no output (status, execute_input, comm_*...), which are ignored.
  bool add(const std::string& msg_type, const nlohmann::json& content);

  // The outputs collected so far, as nbformat 4 output objects.
  const nlohmann::json& outputs() const { return outputs_; }
  // The execute_result's execution_count, or 0.
  int execution_count() const { return execution_count_; }

 private:
  void append(nlohmann::json output, const nlohmann::json& content);
  void clear();
  void update_display(const std::string& id, const nlohmann::json& content);

  nlohmann::json outputs_ = nlohmann::json::array();
  nlohmann::json* cells_ = nullptr;
  std::size_t cell_index_ = 0;
  int execution_count_ = 0;
  bool clear_on_next_ = false;  // clear_output(wait=True): clear when the next output arrives
  // display_id → (cell index, output position) of every output showing it.
  std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> displays_;
};

}  // namespace cellgate::client
