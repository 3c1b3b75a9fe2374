// SPDX-License-Identifier: BSD-3-Clause
// tool_calls: argument checking and the REST call behind each MCP tool.
#include <functional>
#include <map>
#include <set>

#include <fmt/core.h>

#include "client/http_client.h"
#include "mcp/render.h"
#include "mcp/tools.h"

namespace cellgate::mcp {

using common::Errc;
using common::Result;
using nlohmann::json;

namespace {

constexpr std::chrono::seconds kShortCall{120};     // list, start, file tools, snapshots
constexpr std::chrono::seconds kLongCall{1800};     // execute/process without a timeout of their own
constexpr std::chrono::seconds kCallSlack{30};      // beyond a tool's own timeout: interrupt, restart, reply
constexpr double kMaxToolTimeout = 24 * 3600;

// Reads a tool's arguments against its schema; the first problem is kept and reported as -32602.
class Args {
 public:
  explicit Args(const json& a) : a_(a) {}
  std::string required_string(const char* key) {
    auto it = a_.find(key);
    if (it == a_.end() || !it->is_string()) fail(fmt::format("'{}' is required and must be a string", key));
    else if (it->get_ref<const std::string&>().empty()) fail(fmt::format("'{}' must not be empty", key));
    else return it->get<std::string>();
    return {};
  }
  std::optional<std::string> string(const char* key) {
    auto it = a_.find(key);
    if (it == a_.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) return fail(fmt::format("'{}' must be a string", key)), std::nullopt;
    return it->get<std::string>();
  }
  std::optional<double> seconds(const char* key) {
    auto it = a_.find(key);
    if (it == a_.end() || it->is_null()) return std::nullopt;
    if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > kMaxToolTimeout)
      return fail(fmt::format("'{}' must be a number of seconds in (0, {}]", key, kMaxToolTimeout)), std::nullopt;
    return it->get<double>();
  }
  std::optional<int64_t> count(const char* key) {
    auto it = a_.find(key);
    if (it == a_.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      return fail(fmt::format("'{}' must be a non-negative integer", key)), std::nullopt;
    return it->get<int64_t>();
  }
  std::optional<bool> flag(const char* key) {
    auto it = a_.find(key);
    if (it == a_.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) return fail(fmt::format("'{}' must be true or false", key)), std::nullopt;
    return it->get<bool>();
  }
  std::optional<json> strings(const char* key) {
    auto it = a_.find(key);
    if (it == a_.end() || it->is_null()) return std::nullopt;
    bool ok = it->is_array();
    if (ok)
      for (const auto& v : *it) ok = ok && v.is_string();
    if (!ok) return fail(fmt::format("'{}' must be an array of strings", key)), std::nullopt;
    return *it;
  }
  bool has(const char* key) const { return a_.contains(key) && !a_.at(key).is_null(); }
  void fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }
  const std::string& error() const { return error_; }

 private:
  const json& a_;
  std::string error_;
};

using Call = std::function<json(client::RestApi&, const std::string&, Args&)>;

std::chrono::seconds after(std::optional<double> timeout, std::chrono::seconds fallback) {
  return timeout ? std::chrono::seconds(static_cast<int64_t>(*timeout)) + kCallSlack : fallback;
}

// Performs the call; on success hands the answer to render, else renders the failure.
json rest(client::RestApi& backend, const std::string& token, client::RestCall call, const std::function<json(const json&)>& render) {
  auto reply = backend.call(call, token);
  if (!reply) return tool_result(json::array({text_content("Error: " + reply.error().message)}), true);
  if (reply->status < 200 || reply->status >= 300) return render_http_error(reply->status, reply->body);
  return render(reply->body);
}

json text_result(std::string text) { return tool_result(json::array({text_content(std::move(text))}), false); }

std::string field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "?";
  const json& v = j.at(key);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string kernel_path(const std::string& id, const char* rest) { return "api/kernels/" + client::escape_segment(id) + rest; }
std::string ws_path(const std::string& ws, const std::string& rest) {
  return "api/workspaces/" + client::escape_segment(ws) + "/snapshots" + rest;
}

json list_kernels(client::RestApi& b, const std::string& token, Args&) {
  return rest(b, token, {"GET", "api/kernels", nullptr, kShortCall}, [](const json& list) {
    if (!list.is_array()) return text_result(dump_text(list));
    if (list.empty()) return text_result("No kernels are running. Start one with start_kernel.");
    std::string text = fmt::format("{} kernel(s):", list.size());
    for (const auto& k : list)
      text += fmt::format("\n- kernel_id: {}  name: {}  state: {}  last_activity: {}", field(k, "id"), field(k, "name"),
                          field(k, "execution_state"), field(k, "last_activity"));
    return text_result(text);
  });
}

json start_kernel(client::RestApi& b, const std::string& token, Args& a) {
  json body = json::object();
  if (auto name = a.string("name")) body["name"] = *name;
  if (auto ws = a.string("workspace")) body["workspace"] = *ws;
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", "api/kernels", body, kShortCall}, [](const json& k) {
    return text_result(fmt::format("Kernel started.\nkernel_id: {}\nname: {}\nstate: {}", field(k, "id"),
                                   field(k, "name"), field(k, "execution_state")));
  });
}

json execute(client::RestApi& b, const std::string& token, Args& a) {
  std::string id = a.required_string("kernel_id");
  json body = {{"code", a.required_string("code")}};
  auto timeout = a.seconds("timeout");
  if (timeout) body["timeout"] = *timeout;
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", kernel_path(id, "/execute"), body, after(timeout, kLongCall)}, render_execute);
}

json read(client::RestApi& b, const std::string& token, Args& a) {
  std::string id = a.required_string("kernel_id");
  json body = {{"path", a.required_string("path")}};
  if (auto offset = a.count("offset")) body["offset"] = *offset;
  if (auto limit = a.count("limit")) body["limit"] = *limit;
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", kernel_path(id, "/tools/read"), body, kShortCall}, render_read);
}

json write(client::RestApi& b, const std::string& token, Args& a) {
  std::string id = a.required_string("kernel_id");
  json body = {{"path", a.required_string("path")}};
  auto content = a.string("content");
  if (!content) a.fail("'content' is required and must be a string");
  if (!a.error().empty()) return nullptr;
  body["content"] = *content;
  return rest(b, token, {"POST", kernel_path(id, "/tools/write"), body, kShortCall}, [](const json& r) {
    return text_result(fmt::format("Wrote {} bytes to {}.", field(r, "bytes"), field(r, "path")));
  });
}

json edit(client::RestApi& b, const std::string& token, Args& a) {
  std::string id = a.required_string("kernel_id");
  json body = {{"path", a.required_string("path")}};
  const bool by_diff = a.has("diff");
  if (by_diff && (a.has("old_string") || a.has("new_string") || a.has("replace_all"))) {
    a.fail("give either 'diff' or 'old_string'/'new_string', not both");
  } else if (by_diff) {
    body["diff"] = a.required_string("diff");
  } else {
    body["old_string"] = a.required_string("old_string");
    auto replacement = a.string("new_string");
    if (!replacement) a.fail("'new_string' is required (or give 'diff')");
    else body["new_string"] = *replacement;
    if (auto all = a.flag("replace_all")) body["replace_all"] = *all;
  }
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", kernel_path(id, "/tools/edit"), body, kShortCall}, [](const json& r) {
    return text_result(fmt::format("Edited {}: {} replacement(s).", field(r, "path"), field(r, "replacements")));
  });
}

json process(client::RestApi& b, const std::string& token, Args& a) {
  std::string id = a.required_string("kernel_id");
  json body = {{"command", a.required_string("command")}};
  if (auto args = a.strings("args")) body["args"] = *args;
  auto timeout = a.seconds("timeout");
  if (timeout) body["timeout"] = *timeout;
  if (auto in = a.string("stdin")) body["stdin"] = *in;
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", kernel_path(id, "/tools/process"), body, after(timeout, kLongCall)}, render_process);
}

json snapshot(client::RestApi& b, const std::string& token, Args& a) {
  std::string ws = a.required_string("workspace");
  json body = json::object();
  if (auto label = a.string("label")) body["label"] = *label;
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", ws_path(ws, ""), body, kShortCall}, [](const json& r) {
    return text_result(fmt::format("Snapshot created.\nsnapshot_id: {}\n{}", field(r, "id"), dump_text(r)));
  });
}

json restore(client::RestApi& b, const std::string& token, Args& a) {
  std::string ws = a.required_string("workspace");
  std::string snap = a.required_string("snapshot_id");
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", ws_path(ws, "/" + client::escape_segment(snap) + "/restore"), json::object(), kShortCall},
              render_restore);
}

json list_snapshots(client::RestApi& b, const std::string& token, Args& a) {
  std::string ws = a.required_string("workspace");
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"GET", ws_path(ws, ""), nullptr, kShortCall}, [](const json& r) {
    const json* list = r.is_object() && r.contains("snapshots") ? &r.at("snapshots") : &r;
    if (list->is_array() && list->empty()) return text_result("No snapshots yet. Create one with snapshot.");
    return text_result(dump_text(r));
  });
}

// One journal entry as a reader skims it: who ran what, how it ended, and the start of its outputs.
std::string journal_entry_text(const json& e) {
  constexpr size_t kOutputChars = 2000;
  std::string text = fmt::format("\n[{}] {} {} by {} via {} at {}", field(e, "seq"), field(e, "kind"),
                                 field(e, "status"), field(e, "user"), field(e, "client"), field(e, "started"));
  if (e.value("kind", "") != "execute") return text + (e.contains("reason") ? ": " + field(e, "reason") : "");
  if (e.value("silent", false)) text += " (silent)";
  text += "\n" + field(e, "code");
  std::string out;
  for (const auto& o : e.value("outputs", json::array())) {
    if (o.contains("text")) out += field(o, "text");
    else if (o.value("output_type", "") == "error") out += field(o, "ename") + ": " + field(o, "evalue") + "\n";
    else if (o.contains("data") && o["data"].contains("text/plain")) out += field(o["data"], "text/plain") + "\n";
  }
  if (out.size() > kOutputChars) out = out.substr(0, kOutputChars) + "... (cut)\n";
  if (!out.empty()) text += "\n--- output ---\n" + out;
  return text;
}

json journal(client::RestApi& b, const std::string& token, Args& a) {
  std::string id = a.required_string("kernel_id");
  auto since = a.count("since");
  if (!a.error().empty()) return nullptr;
  std::string path = kernel_path(id, "/journal") + "?limit=100&since=" + std::to_string(since.value_or(0));
  return rest(b, token, {"GET", path, nullptr, kShortCall}, [](const json& j) {
    if (!j.is_object() || !j.contains("entries")) return text_result(dump_text(j));
    std::string text = fmt::format("Journal of kernel {} (owner {}, kernelspec {}{}): {} entr{}.", field(j, "kernel_id"),
                                   field(j, "owner"), field(j, "kernelspec"),
                                   j.value("deleted", "").empty() ? "" : ", deleted", j["entries"].size(),
                                   j["entries"].size() == 1 ? "y" : "ies");
    for (const auto& e : j["entries"]) text += journal_entry_text(e);
    if (j.contains("next") && !j["next"].is_null())
      text += fmt::format("\nMore entries follow: call journal again with since={}.", j["next"].dump());
    return text_result(text);
  });
}

json publish_artifact(client::RestApi& b, const std::string& token, Args& a) {
  std::string ws = a.required_string("workspace");
  json body = {{"path", a.required_string("path")}};
  if (auto name = a.string("name")) body["name"] = *name;
  if (!a.error().empty()) return nullptr;
  return rest(b, token, {"POST", "api/workspaces/" + client::escape_segment(ws) + "/artifacts", body, kShortCall},
              [](const json& r) {
                std::string made = r.is_object() && r.contains("kernel_id") && !r["kernel_id"].is_null()
                                       ? fmt::format("\nmade by kernel {} execution {}", field(r, "kernel_id"),
                                                     field(r, "execution_count"))
                                       : std::string();
                return text_result(fmt::format("Published artifact {} ({} bytes, {}).\nartifact_id: {}\nsha256: {}{}",
                                               field(r, "name"), field(r, "size"), field(r, "media_type"),
                                               field(r, "id"), field(r, "sha256"), made));
              });
}

const std::map<std::string, Call>& dispatch() {
  static const std::map<std::string, Call> table = {
      {"list_kernels", list_kernels}, {"start_kernel", start_kernel}, {"execute", execute},
      {"read", read},                 {"write", write},               {"edit", edit},
      {"process", process},           {"snapshot", snapshot},         {"restore", restore},
      {"list_snapshots", list_snapshots}, {"journal", journal}, {"publish_artifact", publish_artifact}};
  return table;
}

// The property names a tool's schema allows (additionalProperties is false).
std::set<std::string> allowed_keys(const std::string& name) {
  std::set<std::string> keys;
  for (const auto& t : tool_catalog())
    if (t["name"] == name)
      for (const auto& [k, v] : t["inputSchema"]["properties"].items()) keys.insert(k);
  return keys;
}

}  // namespace

json text_content(std::string text) { return {{"type", "text"}, {"text", std::move(text)}}; }
json image_content(std::string base64, std::string mime_type) {
  return {{"type", "image"}, {"data", std::move(base64)}, {"mimeType", std::move(mime_type)}};
}
json tool_result(json content, bool is_error) { return {{"content", std::move(content)}, {"isError", is_error}}; }

Result<json> call_tool(client::RestApi& backend, const std::string& token, const std::string& name, const json& arguments) {
  auto it = dispatch().find(name);
  if (it == dispatch().end()) return common::make_error(Errc::kBadRequest, "Unknown tool: " + name);
  if (!arguments.is_object()) return common::make_error(Errc::kBadRequest, "arguments must be an object");
  auto keys = allowed_keys(name);
  for (const auto& [k, v] : arguments.items())
    if (!keys.count(k))
      return common::make_error(Errc::kBadRequest, fmt::format("{}: unknown argument '{}'", name, k));
  Args args(arguments);
  json result = it->second(backend, token, args);
  if (!args.error().empty()) return common::make_error(Errc::kBadRequest, name + ": " + args.error());
  return result;
}

}  // namespace cellgate::mcp
