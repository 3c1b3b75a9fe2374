// SPDX-License-Identifier: BSD-3-Clause
// render: a journal as JSON entries and as an nbformat 4 notebook.
#include "journal/render.h"

#include <fmt/core.h>

#include <map>

#include "protocol/json_text.h"

namespace cellgate::journal {

using nlohmann::json;

namespace {

bool is_json_mime(const std::string& mime) {
  // nbformat 4's mimebundle: these may hold any JSON; every other value is a (multiline) string.
  return mime.rfind("application/", 0) == 0 && (mime == "application/json" || mime.ends_with("+json"));
}

// A string, or a list of strings joined (nbformat's multiline_string); nullopt for anything else.
std::optional<std::string> multiline(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) return std::nullopt;
  std::string out;
  for (const auto& part : v) {
    if (!part.is_string()) return std::nullopt;
    out += part.get_ref<const std::string&>();
  }
  return out;
}

json mime_bundle(const json& data) {
  json b = json::object();
  if (!data.is_object()) return b;
  for (const auto& [mime, value] : data.items()) {
    if (is_json_mime(mime)) b[mime] = value;
    else if (auto text = multiline(value)) b[mime] = *text;
  }
  return b;
}

json object_or_empty(const json& v) { return v.is_object() ? v : json::object(); }

json note(const std::string& text) {
  return {{"output_type", "stream"}, {"name", "stderr"}, {"text", "[cellgate] " + text + "\n"}};
}

// One iopub message's content as an nbformat output, or null when it does not fit the schema.
json to_nbformat(const std::string& type, const json& c) {
  if (!c.is_object()) return nullptr;
  if (type == "stream") {
    auto name = c.find("name");
    auto text = c.find("text");
    if (name == c.end() || text == c.end() || !name->is_string()) return nullptr;
    const std::string& n = name->get_ref<const std::string&>();
    auto t = multiline(*text);
    if ((n != "stdout" && n != "stderr") || !t) return nullptr;
    return {{"output_type", "stream"}, {"name", n}, {"text", *t}};
  }
  if (type == "display_data" || type == "execute_result") {
    json o = {{"output_type", type},
              {"data", mime_bundle(c.value("data", json::object()))},
              {"metadata", object_or_empty(c.value("metadata", json::object()))}};
    if (type == "execute_result") {
      auto count = c.find("execution_count");
      o["execution_count"] = count != c.end() && count->is_number_integer() ? *count : json(nullptr);
    }
    return o;
  }
  if (type == "error") {
    json tb = json::array();
    if (auto t = c.find("traceback"); t != c.end() && t->is_array())
      for (const auto& line : *t)
        if (line.is_string()) tb.push_back(line);
    auto str = [&](const char* key) {
      auto it = c.find(key);
      return it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    return {{"output_type", "error"}, {"ename", str("ename")}, {"evalue", str("evalue")}, {"traceback", tb}};
  }
  return nullptr;
}

std::string display_id(const json& c) {
  if (!c.is_object()) return "";
  auto t = c.find("transient");
  if (t == c.end() || !t->is_object()) return "";
  auto id = t->find("display_id");
  return id != t->end() && id->is_string() ? id->get<std::string>() : "";
}

// The detail column's members, for the API and the notebook's cell metadata.
void merge_detail(json& into, const std::string& detail) {
  auto d = protocol::parse_untrusted_json(detail);
  if (!d.is_object()) return;
  for (auto& [k, v] : d.items()) into[k] = v;
}

json cell_metadata(const state::JournalEntryRow& e) {
  json m = {{"seq", e.seq},
            {"kind", e.kind},
            {"status", e.status},
            {"user", e.run_by},
            {"client", e.client},
            {"started", e.started},
            {"ended", e.ended}};
  if (!e.session.empty()) m["session"] = e.session;
  if (!e.msg_id.empty()) m["msg_id"] = e.msg_id;
  if (e.silent) m["silent"] = true;
  if (!e.snapshot_before.empty()) m["snapshot_before"] = e.snapshot_before;
  if (!e.snapshot_after.empty()) m["snapshot"] = e.snapshot_after;
  merge_detail(m, e.detail);
  return m;
}

std::string cell_id(int64_t seq) { return fmt::format("cellgate-{}", seq); }

json markdown_cell(std::string id, std::string source, json cellgate) {
  return {{"cell_type", "markdown"}, {"id", std::move(id)}, {"metadata", {{"cellgate", std::move(cellgate)}}},
          {"source", std::move(source)}};
}

std::string marker_text(const state::JournalEntryRow& e) {
  std::string reason;
  if (auto d = protocol::parse_untrusted_json(e.detail); d.is_object() && d.contains("reason") && d["reason"].is_string())
    reason = d["reason"].get<std::string>();
  const char* what = e.kind == "restart" ? "Kernel restarted" : e.kind == "died" ? "Kernel died" : "Gateway restarted";
  return fmt::format("**{}** at {}{}{}", what, e.started, reason.empty() ? "" : ": ", reason);
}

}  // namespace

json nbformat_outputs(const std::string& outputs_column, const BlobReader& read, size_t* bytes) {
  json out = json::array();
  auto items = protocol::parse_untrusted_json(outputs_column);
  if (!items.is_array()) return out;
  std::map<std::string, std::vector<size_t>> displays;  // display_id → indexes in out
  bool clear_pending = false;
  for (const auto& item : items) {
    if (!item.is_object() || !item.contains("msg_type") || !item["msg_type"].is_string()) continue;
    const std::string type = item["msg_type"];
    json content;
    if (auto c = item.find("content"); c != item.end()) {
      content = *c;
    } else if (auto h = item.find("content_sha256"); h != item.end() && h->is_string()) {
      auto text = read ? read(h->get<std::string>()) : common::Result<std::string>(common::make_error(common::Errc::kNotFound, "no store"));
      if (!text) {
        out.push_back(note("an output of this cell is no longer in the store (" + text.error().message + ")"));
        continue;
      }
      if (bytes) *bytes += text->size();
      content = protocol::parse_untrusted_json(*text);
    } else {
      out.push_back(note("an output of this cell was not recorded: " + item.value("lost", std::string("unknown"))));
      continue;
    }
    if (type == "clear_output") {
      if (content.is_object() && content.value("wait", false)) {
        clear_pending = true;
      } else {
        out = json::array();
        displays.clear();
      }
      continue;
    }
    if (clear_pending) {
      out = json::array();
      displays.clear();
      clear_pending = false;
    }
    if (type == "update_display_data") {
      auto it = displays.find(display_id(content));
      if (it == displays.end() || !content.is_object()) continue;
      for (size_t i : it->second) {
        out[i]["data"] = mime_bundle(content.value("data", json::object()));
        out[i]["metadata"] = object_or_empty(content.value("metadata", json::object()));
      }
      continue;
    }
    json o = to_nbformat(type, content);
    if (o.is_null()) {
      out.push_back(note("a " + type + " output did not fit nbformat and is left out"));
      continue;
    }
    if (type == "stream" && !out.empty() && out.back()["output_type"] == "stream" && out.back()["name"] == o["name"]) {
      out.back()["text"] = out.back()["text"].get<std::string>() + o["text"].get<std::string>();
      continue;
    }
    if (type == "display_data")
      if (auto id = display_id(content); !id.empty()) displays[id].push_back(out.size());
    out.push_back(std::move(o));
  }
  return out;
}

json entry_json(const state::JournalEntryRow& e, const BlobReader& read, size_t* bytes) {
  json j = {{"seq", e.seq},
            {"kind", e.kind},
            {"status", e.status},
            {"user", e.run_by},
            {"client", e.client},
            {"session", e.session},
            {"msg_id", e.msg_id},
            {"silent", e.silent},
            {"code", e.code},
            {"started", e.started},
            {"ended", e.ended},
            {"execution_count", e.execution_count ? json(*e.execution_count) : json(nullptr)},
            {"snapshot_before", e.snapshot_before},
            {"snapshot_after", e.snapshot_after},
            {"bytes", e.bytes},
            {"outputs", nbformat_outputs(e.outputs, read, bytes)}};
  merge_detail(j, e.detail);
  if (bytes) *bytes += e.code.size() + e.outputs.size() + 512;
  return j;
}

json journal_json(const state::JournalRow& journal, const std::vector<state::JournalEntryRow>& entries,
                  const BlobReader& read, size_t budget) {
  json list = json::array();
  size_t bytes = 0;
  json next = nullptr;
  for (const auto& e : entries) {
    if (bytes >= budget && !list.empty()) {
      next = e.seq - 1;
      break;
    }
    list.push_back(entry_json(e, read, &bytes));
  }
  return {{"kernel_id", journal.kernel_id}, {"owner", journal.owner},       {"kernelspec", journal.kernelspec},
          {"workspace", journal.workspace}, {"created", journal.created},   {"deleted", journal.deleted},
          {"baseline", journal.baseline},   {"note", journal.note},         {"baseline_bytes", journal.baseline_bytes},
          {"entries", std::move(list)},     {"next", next}};
}

json journal_notebook(const state::JournalRow& journal, const NotebookKernel& kernel,
                      const std::vector<state::JournalEntryRow>& entries, const BlobReader& read, size_t budget) {
  json cells = json::array();
  std::string head = fmt::format(
      "# Journal of kernel `{}`\n\nOwner **{}**, kernelspec `{}`, workspace `{}`; started {}{}.\n\n"
      "Every execution the gateway sent to this kernel, in order, with its outputs as the kernel sent them; "
      "cell metadata `cellgate` says who ran each one, how, and which workspace snapshot it left.",
      journal.kernel_id, journal.owner, journal.kernelspec, journal.workspace, journal.created,
      journal.deleted.empty() ? "" : ", deleted " + journal.deleted);
  if (!journal.baseline.empty())
    head += fmt::format(" The workspace before the first execution is snapshot `{}`.", journal.baseline);
  cells.push_back(markdown_cell("cellgate-journal", head,
                                {{"kernel_id", journal.kernel_id}, {"baseline", journal.baseline}}));
  size_t bytes = 0;
  for (const auto& e : entries) {
    if (bytes >= budget) {
      cells.push_back(markdown_cell(
          "cellgate-more",
          fmt::format("*This export stops here to stay within its size bound: entries after {} are read with "
                      "`?since={}`.*",
                      e.seq - 1, e.seq - 1),
          {{"next", e.seq - 1}}));
      break;
    }
    // Entries the writer had to drop (their owner's flood, the database away) leave a gap, said here.
    if (auto d = protocol::parse_untrusted_json(e.detail); d.is_object() && d.contains("unrecorded_before") &&
                                                              d["unrecorded_before"].is_number_unsigned()) {
      const auto n = d["unrecorded_before"].get<uint64_t>();
      cells.push_back(markdown_cell(
          cell_id(e.seq) + "-gap",
          fmt::format("*{} entr{} before this one {} not recorded: the journal's writer was behind (the "
                      "database slow or away) and could hold no more of this owner's entries.*",
                      n, n == 1 ? "y" : "ies", n == 1 ? "was" : "were"),
          {{"unrecorded", n}, {"before_seq", e.seq}}));
    }
    if (e.kind != "execute") {
      cells.push_back(markdown_cell(cell_id(e.seq), marker_text(e), cell_metadata(e)));
      bytes += 256;
      continue;
    }
    json md = {{"cellgate", cell_metadata(e)}};
    if (e.silent) {
      // The gateway's own and seeds' executes: shown, folded, and told apart from what a person ran.
      md["tags"] = json::array({"cellgate-silent"});
      md["jupyter"] = {{"source_hidden", true}, {"outputs_hidden", true}};
    }
    cells.push_back({{"cell_type", "code"},
                     {"id", cell_id(e.seq)},
                     {"metadata", std::move(md)},
                     {"source", e.code},
                     {"execution_count", e.execution_count && !e.silent ? json(*e.execution_count) : json(nullptr)},
                     {"outputs", nbformat_outputs(e.outputs, read, &bytes)}});
    bytes += e.code.size() + e.outputs.size() + 512;
  }
  json kernelspec = {{"name", journal.kernelspec},
                     {"display_name", kernel.display_name.empty() ? journal.kernelspec : kernel.display_name}};
  if (!kernel.language.empty()) kernelspec["language"] = kernel.language;
  json metadata = {{"kernelspec", kernelspec},
                   {"cellgate",
                    {{"kernel_id", journal.kernel_id},
                     {"owner", journal.owner},
                     {"workspace", journal.workspace},
                     {"created", journal.created},
                     {"deleted", journal.deleted},
                     {"baseline", journal.baseline}}}};
  if (!kernel.language.empty()) metadata["language_info"] = {{"name", kernel.language}};
  return {{"nbformat", 4}, {"nbformat_minor", 5}, {"metadata", std::move(metadata)}, {"cells", std::move(cells)}};
}

}  // namespace cellgate::journal
