// SPDX-License-Identifier: BSD-3-Clause
// cell_outputs: a cell's iopub messages as nbformat 4 outputs.
#include "client/cell_outputs.h"

namespace cellgate::client {

using nlohmann::json;

namespace {

// What a terminal would show: "\r\n" is a newline, and text before a lone '\r' on a line is overwritten
// (progress bars). nbformat's coalesce_streams does the same.
std::string apply_carriage_returns(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') continue;  // "\r\n" is "\n"
      if (i + 1 < text.size()) out.resize(line_start);            // overwrite the line
      else out += c;                                              // keep a trailing '\r': more may follow
    } else {
      out += c;
      if (c == '\n') line_start = out.size();
    }
  }
  return out;
}

std::string string_field(const json& content, const char* key) {
  auto it = content.find(key);
  return it != content.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string display_id_of(const json& content) {
  auto t = content.find("transient");
  if (t == content.end() || !t->is_object()) return {};
  return string_field(*t, "display_id");
}

json object_field(const json& content, const char* key) {
  auto it = content.find(key);
  return it != content.end() && it->is_object() ? *it : json::object();
}

}  // namespace

void CellOutputs::begin_cell(std::size_t cell_index, json* cells) {
  cells_ = cells;
  cell_index_ = cell_index;
  outputs_ = json::array();
  execution_count_ = 0;
  clear_on_next_ = false;
  clear();
}

void CellOutputs::clear() {
  outputs_ = json::array();
  for (auto& [id, places] : displays_) {
    std::erase_if(places, [this](const auto& p) { return p.first == cell_index_; });
  }
}

void CellOutputs::append(json output, const json& content) {
  if (clear_on_next_) {
    clear();
    clear_on_next_ = false;
  }
  if (std::string id = display_id_of(content); !id.empty()) displays_[id].emplace_back(cell_index_, outputs_.size());
  outputs_.push_back(std::move(output));
}

void CellOutputs::update_display(const std::string& id, const json& content) {
  auto it = displays_.find(id);
  if (it == displays_.end()) return;
  for (auto [cell, pos] : it->second) {
    json* outs = nullptr;
    if (cell == cell_index_) outs = &outputs_;
    else if (cells_ && cell < cells_->size()) outs = &(*cells_)[cell]["outputs"];
    if (!outs || !outs->is_array() || pos >= outs->size()) continue;
    (*outs)[pos]["data"] = object_field(content, "data");
    (*outs)[pos]["metadata"] = object_field(content, "metadata");
  }
}

bool CellOutputs::add(const std::string& msg_type, const json& content) {
  if (msg_type == "stream") {
    std::string name = string_field(content, "name") == "stderr" ? "stderr" : "stdout";
    std::string text = string_field(content, "text");
    if (clear_on_next_) {
      clear();
      clear_on_next_ = false;
    }
    if (!outputs_.empty() && outputs_.back().value("output_type", "") == "stream" &&
        outputs_.back().value("name", "") == name) {
      auto& last = outputs_.back()["text"];
      last = apply_carriage_returns(last.get<std::string>() + text);
    } else {
      outputs_.push_back({{"output_type", "stream"}, {"name", name}, {"text", apply_carriage_returns(text)}});
    }
    return true;
  }
  if (msg_type == "display_data") {
    append({{"output_type", "display_data"}, {"data", object_field(content, "data")},
            {"metadata", object_field(content, "metadata")}},
           content);
    return true;
  }
  if (msg_type == "execute_result") {
    auto count = content.find("execution_count");
    execution_count_ = count != content.end() && count->is_number_integer() ? count->get<int>() : 0;
    append({{"output_type", "execute_result"}, {"data", object_field(content, "data")},
            {"metadata", object_field(content, "metadata")},
            {"execution_count", execution_count_ > 0 ? json(execution_count_) : json(nullptr)}},
           content);
    return true;
  }
  if (msg_type == "error") {
    json traceback = json::array();
    if (auto tb = content.find("traceback"); tb != content.end() && tb->is_array()) {
      for (const auto& line : *tb) {
        if (line.is_string()) traceback.push_back(line);
      }
    }
    append({{"output_type", "error"}, {"ename", string_field(content, "ename")},
            {"evalue", string_field(content, "evalue")}, {"traceback", std::move(traceback)}},
           content);
    return true;
  }
  if (msg_type == "update_display_data") {
    if (std::string id = display_id_of(content); !id.empty()) update_display(id, content);
    return true;
  }
  if (msg_type == "clear_output") {
    auto wait = content.find("wait");
    if (wait != content.end() && wait->is_boolean() && wait->get<bool>()) clear_on_next_ = true;
    else clear();
    return true;
  }
  return false;
}

}  // namespace cellgate::client
