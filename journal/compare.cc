// SPDX-License-Identifier: BSD-3-Clause
// compare: whether a re-run cell gave what the journal recorded.
#include "journal/compare.h"

#include <regex>

#include "workspace/sha256.h"

namespace cellgate::journal {

using nlohmann::json;

namespace {

struct Rule {
  std::regex pattern;
  const char* replacement;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> kRules = [] {
    auto r = [](const char* p, const char* to) { return Rule{std::regex(p, std::regex::ECMAScript | std::regex::optimize), to}; };
    return std::vector<Rule>{
        r(R"(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?)", "<datetime>"),
        r(R"(\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b)", "<time>"),
        r(R"(\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)", "<uuid>"),
        r(R"(\b0x[0-9a-fA-F]{4,}\b)", "0x<addr>"),
        r(R"(/tmp/ipykernel_\d+/\d+\.py)", "/tmp/ipykernel_<pid>/<cell>.py"),
        r(R"(\b\d+(\.\d+)?\s?(ns|µs|us|ms|s)\b)", "<duration>"),
    };
  }();
  return kRules;
}

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& part : v)
      if (part.is_string()) out += part.get_ref<const std::string&>();
    return out;
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool is_textual(const std::string& mime) {
  return mime.rfind("text/", 0) == 0 || mime == "application/json" || mime.ends_with("+json") ||
         mime == "application/javascript" || mime == "image/svg+xml";
}

std::string str(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string normalise_text(const std::string& text) {
  std::string s;
  s.reserve(text.size());
  // Line ends, and blanks at the end of each line.
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (text[i] == '\n')
      while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
    s += text[i];
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  for (const auto& rule : rules()) s = std::regex_replace(s, rule.pattern, rule.replacement);
  return s;
}

std::vector<std::string> output_fingerprints(const json& outputs) {
  std::vector<std::string> out;
  std::string stream_name, stream_text;  // consecutive pieces of one stream are one output, however split
  auto flush = [&] {
    if (!stream_text.empty()) out.push_back("stream " + stream_name + "\n" + normalise_text(stream_text));
    stream_text.clear();
  };
  if (!outputs.is_array()) return out;
  for (const auto& o : outputs) {
    if (!o.is_object()) continue;
    std::string type = str(o, "output_type");
    if (type.empty()) type = str(o, "type");
    if (type == "stream") {
      std::string name = str(o, "name");
      if (name != stream_name) flush();
      stream_name = name;
      stream_text += o.contains("text") ? text_of(o["text"]) : "";
      continue;
    }
    if (type != "error" && type != "execute_result" && type != "display_data") continue;
    flush();
    stream_name.clear();
    if (type == "error") {
      out.push_back("error " + str(o, "ename") + ": " + normalise_text(str(o, "evalue")));
      continue;
    }
    std::string f = type;
    if (auto d = o.find("data"); d != o.end() && d->is_object()) {
      for (const auto& [mime, value] : d->items()) {
        f += "\n" + mime + ": ";
        f += is_textual(mime) ? normalise_text(text_of(value)) : "sha256:" + workspace::sha256_hex(text_of(value));
      }
    }
    out.push_back(std::move(f));
  }
  flush();
  return out;
}

CellComparison compare_outputs(const json& recorded, const json& reproduced) {
  auto a = output_fingerprints(recorded), b = output_fingerprints(reproduced);
  CellComparison c;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
    if (x != y) {
      c.recorded = std::move(x);
      c.reproduced = std::move(y);
      return c;
    }
  }
  c.match = true;
  return c;
}

}  // namespace cellgate::journal
