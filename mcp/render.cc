// SPDX-License-Identifier: BSD-3-Clause
// render: turns cellgate REST answers into MCP tool content an agent can read.
#include "mcp/render.h"

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "mcp/tools.h"

namespace cellgate::mcp {

using nlohmann::json;

namespace {

// Kernel and REST content is untrusted: a field of the wrong type must not throw.
std::string str_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool bool_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}
std::string scalar_text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "?";
  return it->is_string() ? it->get<std::string>() : dump_text(*it);
}

// A mimebundle value is a string or (per nbformat) a list of lines.
std::string bundle_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  std::string out;
  if (v.is_array())
    for (const auto& line : v)
      if (line.is_string()) out += line.get<std::string>();
  return out;
}

// Collects content items, merging consecutive text into one item so the agent reads one block.
class ContentBuilder {
 public:
  void text(const std::string& s) {
    if (s.empty()) return;
    if (!items_.empty() && items_.back()["type"] == "text") {
      std::string& last = items_.back()["text"].get_ref<std::string&>();
      if (!last.empty() && last.back() != '\n') last += '\n';
      last += s;
      return;
    }
    items_.push_back(text_content(s));
  }
  void image(std::string data, std::string mime) { items_.push_back(image_content(std::move(data), std::move(mime))); }
  json take() { return std::move(items_); }

 private:
  json items_ = json::array();
};

void render_bundle(const json& output, ContentBuilder& out) {
  auto data = output.find("data");
  if (data == output.end() || !data->is_object()) return;
  bool shown = false;
  // Raster images travel base64-encoded in the bundle, which is what MCP image content carries.
  for (const char* mime : {"image/png", "image/jpeg", "image/gif", "image/webp"}) {
    auto image = data->find(mime);
    if (image == data->end()) continue;
    std::string b64 = bundle_text(*image);
    b64.erase(std::remove(b64.begin(), b64.end(), '\n'), b64.end());
    if (!b64.empty()) {
      out.image(std::move(b64), mime);
      shown = true;
      break;
    }
  }
  for (const char* mime : {"text/markdown", "text/plain"}) {
    if (auto t = data->find(mime); t != data->end()) {
      // With an image, text/plain is only the repr of the figure object ("<Figure ...>"): skip it.
      if (!(shown && std::string_view(mime) == "text/plain")) out.text(bundle_text(*t));
      return;
    }
  }
  if (!shown) {
    for (const auto& [mime, value] : data->items())
      if (mime.rfind("text/", 0) == 0 || mime == "application/json")
        return out.text(value.is_string() ? value.get<std::string>() : dump_text(value));
    if (!data->empty()) out.text("[output of type " + data->begin().key() + " not shown]");
  }
}

// The after-execute snapshot the gateway reports as "workspace": {workspace, snapshot, added, changed,
// removed} (or {error}); "changes" is accepted as well for a bare {added, changed, removed}.
void render_changes(const json& answer, ContentBuilder& out) {
  for (const char* key : {"workspace", "changes"}) {
    auto c = answer.find(key);
    if (c == answer.end() || !c->is_object()) continue;
    if (std::string err = str_field(*c, "error"); !err.empty()) return out.text("[workspace: " + err + "]");
    std::string line;
    for (const char* kind : {"added", "changed", "removed"}) {
      auto list = c->find(kind);
      if (list == c->end() || !list->is_array() || list->empty()) continue;
      std::string names;
      for (const auto& n : *list)
        if (n.is_string()) names += (names.empty() ? "" : ", ") + n.get<std::string>();
      line += fmt::format("{}{}: {}", line.empty() ? "" : "; ", kind, names);
    }
    if (line.empty()) return;
    std::string name = str_field(*c, "workspace"), snapshot = str_field(*c, "snapshot");
    out.text("[workspace" + (name.empty() ? "" : " " + name) + " " + line +
             (snapshot.empty() ? "" : " (snapshot " + snapshot + ")") + "]");
    return;
  }
}

}  // namespace

std::string dump_text(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

std::string strip_ansi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\x1b') {
      out += s[i];
      continue;
    }
    if (i + 1 >= s.size()) break;
    char kind = s[i + 1];
    if (kind == '[') {  // CSI: parameters and intermediates, then one final byte in 0x40..0x7e
      size_t j = i + 2;
      while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7e)) ++j;
      i = j;
    } else if (kind == ']') {  // OSC: up to BEL or ST (ESC \)
      size_t j = i + 2;
      while (j < s.size() && s[j] != '\x07' && !(s[j] == '\x1b' && j + 1 < s.size() && s[j + 1] == '\\')) ++j;
      i = (j < s.size() && s[j] == '\x1b') ? j + 1 : j;
    } else {
      i += 1;  // a two-byte escape
    }
  }
  return out;
}

json render_execute(const json& answer) {
  ContentBuilder out;
  const std::string status = str_field(answer, "status");
  auto outputs = answer.find("outputs");
  if (outputs != answer.end() && outputs->is_array()) {
    for (const auto& o : *outputs) {
      if (!o.is_object()) continue;
      const std::string type = str_field(o, "type");
      if (type == "stream") {
        out.text(strip_ansi(str_field(o, "text")));
      } else if (type == "execute_result" || type == "display_data" || type == "update_display_data") {
        render_bundle(o, out);
      } else if (type == "error") {
        std::string text = str_field(o, "ename") + ": " + str_field(o, "evalue");
        if (auto tb = o.find("traceback"); tb != o.end() && tb->is_array() && !tb->empty()) {
          text += "\nTraceback:";
          for (const auto& line : *tb)
            if (line.is_string()) text += "\n" + strip_ansi(line.get<std::string>());
        }
        out.text(text);
      }
    }
  }
  if (bool_field(answer, "truncated")) out.text("[outputs truncated: the cell printed more than the output limit]");
  render_changes(answer, out);
  bool is_error = status != "ok";
  if (status == "timeout") out.text("[timed out: the execution was interrupted; the kernel keeps its state]");
  else if (status == "dead") out.text("[the kernel died or is not running; start a new kernel]");
  else if (is_error && status != "error") out.text("[execution status: " + status + "]");
  json content = out.take();
  if (content.empty()) content.push_back(text_content(is_error ? "[no output]" : "[ok, no output]"));
  return tool_result(std::move(content), is_error);
}

json render_read(const json& answer) {
  std::string text = str_field(answer, "content");
  auto number = [&](const char* key) -> std::optional<long long> {
    auto it = answer.find(key);
    if (it == answer.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<long long>();
  };
  auto offset = number("offset"), lines = number("lines"), total = number("total_lines");
  const bool partial =
      bool_field(answer, "truncated") || (offset && lines && total && (*offset > 0 || *offset + *lines < *total));
  if (partial) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    if (offset && lines)
      text += fmt::format("[showing lines {}-{} of {}; next offset {}]", *offset + 1, *offset + *lines,
                          total ? std::to_string(*total) : std::string("?"), *offset + *lines);
    else
      text += "[truncated; use offset and limit to read more]";
  }
  return tool_result(json::array({text_content(text)}), false);
}

json render_process(const json& answer) {
  std::string text = "exit code: " + scalar_text(answer, "exit_code");
  if (bool_field(answer, "timed_out")) text += " (timed out: the program was killed)";
  std::string so = str_field(answer, "stdout"), se = str_field(answer, "stderr");
  if (!so.empty()) text += "\n--- stdout ---\n" + strip_ansi(so);
  if (!se.empty()) text += "\n--- stderr ---\n" + strip_ansi(se);
  if (bool_field(answer, "truncated")) text += "\n[output truncated]";
  return tool_result(json::array({text_content(text)}), bool_field(answer, "timed_out"));
}

json render_restore(const json& answer) {
  std::string text = "Restored snapshot " + scalar_text(answer, "restored") + ".";
  for (const char* kind : {"added", "changed", "removed"}) {
    auto list = answer.find(kind);
    if (list == answer.end() || !list->is_array()) continue;
    std::string names;
    for (const auto& f : *list)
      if (f.is_string()) names += (names.empty() ? "" : ", ") + f.get<std::string>();
    text += fmt::format("\nfiles {} by the restore ({}): {}", kind, list->size(), names.empty() ? "none" : names);
  }
  return tool_result(json::array({text_content(text)}), false);
}

json render_http_error(int status, const json& body) {
  std::string message = body.is_object() ? str_field(body, "message") : std::string();
  std::string reason = body.is_object() ? str_field(body, "reason") : std::string();
  if (message.empty() && body.is_string()) message = body.get<std::string>().substr(0, 2000);
  if (message.empty()) message = reason.empty() ? "request failed" : reason;
  return tool_result(json::array({text_content(fmt::format("Error (HTTP {}): {}", status, message))}), true);
}

}  // namespace cellgate::mcp
