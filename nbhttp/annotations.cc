// SPDX-License-Identifier: BSD-3-Clause
// annotations: Kernel Gateway's notebook-http annotations.
#include "nbhttp/annotations.h"

#include <algorithm>
#include <cctype>
#include <climits>

#include "kernel-launcher/language_literal.h"
#include "protocol/json_text.h"

namespace cellgate::nbhttp {

using nlohmann::json;

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Consumes one or more whitespace characters (Python's \s+); false when there is none.
bool skip_spaces(std::string_view s, size_t& i) {
  size_t start = i;
  while (i < s.size() && is_space(s[i])) ++i;
  return i > start;
}

std::string trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

// KG's first_path_param_index: how deep the first `:` sits, or "none" (sorted first).
long first_param_depth(const std::string& path) {
  auto colon = path.find(':');
  if (colon == std::string::npos) return LONG_MAX;
  return static_cast<long>(std::count(path.begin(), path.begin() + static_cast<long>(colon), '/')) - 1;
}

std::vector<std::string_view> split_segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

// Query or form text → {name: [values]}, blank values kept (Tornado's parse_qs_bytes).
json parse_query(std::string_view q) {
  json out = json::object();
  while (!q.empty()) {
    auto amp = q.find('&');
    auto pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string name = http::percent_decode(pair.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : http::percent_decode(pair.substr(eq + 1), true);
    if (!out.contains(name)) out[name] = json::array();
    out[name].push_back(value);
  }
  return out;
}

// Tornado's HTTPHeaders normalisation: content-type → Content-Type.
std::string header_case(std::string_view name) {
  std::string out(name);
  bool start = true;
  for (char& c : out) {
    c = static_cast<char>(start ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    start = c == '-';
  }
  return out;
}

std::string media_type(std::string_view content_type) {
  auto semi = content_type.find(';');
  std::string out = trim(content_type.substr(0, semi));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<Annotation> parse_annotation(std::string_view source, std::string_view comment_prefix) {
  if (!source.starts_with(comment_prefix)) return std::nullopt;
  size_t i = comment_prefix.size();
  if (!skip_spaces(source, i)) return std::nullopt;
  Annotation a;
  constexpr std::string_view kResponseInfo = "ResponseInfo";
  if (source.substr(i).starts_with(kResponseInfo)) {
    size_t j = i + kResponseInfo.size();
    if (skip_spaces(source, j)) {
      a.response_info = true;
      i = j;
    }
  }
  for (const char* verb : {"GET", "PUT", "POST", "DELETE"}) {
    if (source.substr(i).starts_with(verb)) {
      a.verb = verb;
      break;
    }
  }
  if (a.verb.empty()) return std::nullopt;
  i += a.verb.size();
  if (!skip_spaces(source, i) || i >= source.size() || source[i] != '/') return std::nullopt;
  // (\/.*)+ : the rest of the line ('.' stops at a newline).
  size_t end = source.find('\n', i);
  a.path = trim(source.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
  return a;
}

std::string comment_prefix_for(std::string_view language) { return language == "scala" ? "//" : "#"; }

std::vector<Endpoint> collect_endpoints(const std::vector<std::string>& sources, std::string_view comment_prefix) {
  std::vector<Endpoint> endpoints;
  auto slot = [&](const std::string& path) -> Endpoint& {
    for (auto& e : endpoints)
      if (e.path == path) return e;
    endpoints.push_back(Endpoint{path, {}, {}});
    return endpoints.back();
  };
  for (const auto& src : sources) {
    auto a = parse_annotation(src, comment_prefix);
    if (!a) continue;
    Endpoint& e = slot(a->path);
    (a->response_info ? e.response_sources : e.sources)[a->verb] += src + "\n";
  }
  // ResponseInfo without an endpoint cell of its own serves nothing (KG registers only annotated paths).
  std::erase_if(endpoints, [](const Endpoint& e) { return e.sources.empty(); });
  std::stable_sort(endpoints.begin(), endpoints.end(), [](const Endpoint& a, const Endpoint& b) {
    return first_param_depth(a.path) > first_param_depth(b.path);
  });
  return endpoints;
}

bool match_path(std::string_view pattern, std::string_view path, std::map<std::string, std::string>& params) {
  auto want = split_segments(pattern);
  auto got = split_segments(path);
  if (want.size() != got.size()) return false;
  std::map<std::string, std::string> found;
  for (size_t i = 0; i < want.size(); ++i) {
    auto colon = want[i].find(':');
    if (colon == std::string_view::npos) {
      if (want[i] != got[i]) return false;
      continue;
    }
    auto prefix = want[i].substr(0, colon);
    if (got[i].size() <= prefix.size() || !got[i].starts_with(prefix)) return false;
    found[std::string(want[i].substr(colon + 1))] = http::percent_decode(got[i].substr(prefix.size()));
  }
  params = std::move(found);
  return true;
}

const Endpoint* find_endpoint(const std::vector<Endpoint>& endpoints, std::string_view path,
                              std::map<std::string, std::string>& params) {
  for (const auto& e : endpoints)
    if (match_path(e.path, path, params)) return &e;
  return nullptr;
}

json request_bundle(const Request& req, const std::map<std::string, std::string>& params, bool strip_credentials) {
  std::string_view target(req.target().data(), req.target().size());
  auto q = target.find('?');
  json args = q == std::string_view::npos ? json::object() : parse_query(target.substr(q + 1));
  if (strip_credentials) args.erase("token");
  json headers = json::object();
  for (const auto& field : req) {
    if (strip_credentials && field.name() == http::field::authorization) continue;
    std::string name = header_case(std::string_view(field.name_string().data(), field.name_string().size()));
    std::string value(field.value().data(), field.value().size());
    auto it = headers.find(name);
    if (it == headers.end()) {
      headers[name] = value;
    } else {
      if (!it->is_array()) *it = json::array({*it});
      it->push_back(value);
    }
  }
  const std::string& text = req.body();
  std::string type = media_type(std::string_view(req[http::field::content_type].data(), req[http::field::content_type].size()));
  json body = text;
  if (type == "application/x-www-form-urlencoded") {
    body = parse_query(text);
  } else if (type == "application/json") {
    auto parsed = protocol::parse_untrusted_json(text);
    if (!parsed.is_discarded()) body = std::move(parsed);
  }
  return {{"body", std::move(body)}, {"args", std::move(args)}, {"path", json(params)}, {"headers", std::move(headers)}};
}

std::optional<std::string> request_statement(const json& bundle, std::string_view language) {
  // REQUEST holds the bundle as JSON text, which the cell decodes. Kernel Gateway spliced a JSON string
  // literal into the code, which bash, perl, ruby and julia interpolate ("$(..)", "@{[..]}", "#{..}"):
  // any HTTP client could run code in a kernel that serves later requests. ensure_ascii leaves printable
  // ASCII only (nlohmann escapes controls and everything from 0x7f), which every literal rule takes.
  const std::string text = bundle.dump(-1, ' ', true, json::error_handler_t::replace);
  return launcher::assign_statement(language, "REQUEST", text);
}

}  // namespace cellgate::nbhttp
