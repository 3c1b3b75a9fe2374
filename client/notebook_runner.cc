// SPDX-License-Identifier: BSD-3-Clause
// notebook_runner: runs a notebook on a gateway as a client, writing the outputs into it.
#include "client/notebook_runner.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "client/cell_outputs.h"
#include "client/kernel_ws_client.h"

namespace cellgate::client {

using common::Errc;
using common::make_error;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kMaxFiles = 64;
constexpr std::size_t kMaxFileBytes = 64u << 20;
constexpr std::size_t kMaxCellOutputBytes = 256u << 20;

// "reason: message" of a gateway error reply, or the HTTP status.
std::string reply_error(const RestReply& r) {
  if (r.body.is_object()) {
    std::string message = r.body.value("message", "");
    if (!message.empty()) return fmt::format("{} (HTTP {})", message, r.status);
  }
  return fmt::format("HTTP {}", r.status);
}

bool valid_relative_path(const std::string& p) {
  if (p.empty() || p.size() > 1024 || p.front() == '/' || p.find('\0') != std::string::npos) return false;
  for (const auto& part : std::filesystem::path(p)) {
    if (part == ".." || part == ".") return false;
  }
  return true;
}

std::string escape_path(const std::string& p) {
  std::string out;
  for (const auto& part : std::filesystem::path(p)) {
    if (part.empty()) continue;
    if (!out.empty()) out += '/';
    out += escape_segment(part.string());
  }
  return out;
}

bool has_tag(const json& cell, const char* tag) {
  auto meta = cell.find("metadata");
  if (meta == cell.end() || !meta->is_object()) return false;
  auto tags = meta->find("tags");
  if (tags == meta->end() || !tags->is_array()) return false;
  for (const auto& t : *tags) {
    if (t.is_string() && t.get<std::string>() == tag) return true;
  }
  return false;
}

std::string first_line(const std::string& source) {
  std::string line = source.substr(0, source.find('\n'));
  if (line.size() > 60) line = line.substr(0, 57) + "...";
  return line;
}

// The kernel's answer to one execute_request, gathered from shell and iopub.
struct CellRun {
  json reply;                 // execute_reply content
  json reply_metadata;        // execute_reply metadata (cellgate's snapshot report)
  std::string died;           // why the kernel went away mid-cell, if it did
};

// Reads until both the execute_reply and iopub's idle for msg_id arrived. Errors: kTimeout, or the socket's.
common::Result<CellRun> collect(KernelWsClient& ws, const std::string& msg_id, CellOutputs& outputs,
                                Clock::time_point deadline) {
  CellRun run;
  bool replied = false, idle = false;
  std::size_t bytes = 0;
  while (!(replied && idle)) {
    auto m = ws.read(deadline);
    if (!m) return m.error();
    if (m->msg_type == "status" && m->channel == "iopub") {
      std::string state = m->content.value("execution_state", "");
      if (m->parent_id == msg_id && state == "idle") idle = true;
      if (state == "dead" || state == "restarting") {
        run.died = run.died.empty() ? "the kernel " + std::string(state == "dead" ? "died" : "restarted") : run.died;
        return run;
      }
      continue;
    }
    if (m->parent_id != msg_id) {
      // The gateway's own notices (why a kernel died) come without a parent.
      if (m->parent_id.empty() && m->msg_type == "error") run.died = m->content.value("evalue", "");
      continue;
    }
    if (m->channel == "shell" && m->msg_type == "execute_reply") {
      run.reply = std::move(m->content);
      run.reply_metadata = std::move(m->metadata);
      replied = true;
    } else if (m->channel == "iopub") {
      bytes += m->bytes;
      if (bytes > kMaxCellOutputBytes) {
        return make_error(Errc::kTooLarge, fmt::format("more than {} MiB of output", kMaxCellOutputBytes >> 20));
      }
      outputs.add(m->msg_type, m->content);
    }
  }
  return run;
}

// Waits for kernel_info_reply (the kernel is ready) and returns its content.
common::Result<json> kernel_info(KernelWsClient& ws, Clock::time_point deadline) {
  auto id = ws.send("shell", "kernel_info_request", json::object(), deadline);
  if (!id) return id.error();
  for (;;) {
    auto m = ws.read(deadline);
    if (!m) return m.error();
    if (m->msg_type == "kernel_info_reply" && m->parent_id == *id) return std::move(m->content);
  }
}

}  // namespace

common::Result<std::vector<std::pair<std::string, std::string>>> read_notebook_files(const launcher::Notebook& nb,
                                                                                  const std::string& notebook_dir) {
  std::vector<std::pair<std::string, std::string>> files;
  const json& meta = nb.doc["metadata"];
  auto cg = meta.find("cellgate");
  if (cg == meta.end() || !cg->is_object() || !cg->contains("files")) return files;
  const json& names = (*cg)["files"];
  if (!names.is_array()) return make_error(Errc::kBadRequest, "metadata.cellgate.files must be a list of paths");
  if (names.size() > kMaxFiles) return make_error(Errc::kBadRequest, fmt::format("more than {} files", kMaxFiles));
  for (const auto& n : names) {
    if (!n.is_string() || !valid_relative_path(n.get<std::string>())) {
      return make_error(Errc::kBadRequest, fmt::format("metadata.cellgate.files: {} is not a relative path", n.dump()));
    }
    std::string name = n.get<std::string>();
    auto path = std::filesystem::path(notebook_dir) / name;
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    if (ec || !std::filesystem::is_regular_file(path, ec)) {
      return make_error(Errc::kNotFound, fmt::format("{}: not a readable file", path.string()));
    }
    if (size > kMaxFileBytes) return make_error(Errc::kTooLarge, fmt::format("{}: larger than 64 MiB", path.string()));
    std::ifstream in(path, std::ios::binary);
    std::string bytes(size, '\0');
    if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
      return make_error(Errc::kNotFound, fmt::format("{}: cannot read", path.string()));
    }
    files.emplace_back(name, std::move(bytes));
  }
  return files;
}

namespace {

// Everything after the kernel exists; the caller deletes the kernel whatever happens here.
common::Result<RunReport> run_on_kernel(launcher::Notebook& nb, HttpClient& http, const BaseUrl& url,
                                        const std::string& token, const json& model, const RunOptions& options,
                                        const std::vector<std::pair<std::string, std::string>>& files) {
  RunReport report;
  auto cancelled = [&options, &report] {
    if (!options.cancelled || !options.cancelled()) return false;
    report.ok = false;
    report.failure = "interrupted";
    return true;
  };
  if (cancelled()) return report;
  const std::string kid = model.value("id", "");
  report.kernel_name = model.value("name", "");
  const std::string workspace = model.value("workspace", "");
  for (const auto& [name, bytes] : files) {
    auto r = http.put_bytes("api/workspaces/" + escape_segment(workspace) + "/files/" + escape_path(name), bytes,
                            token, std::chrono::seconds(options.start_timeout_s));
    if (!r) return r.error();
    if (r->status >= 300) return make_error(Errc::kInternal, fmt::format("uploading {}: {}", name, reply_error(*r)));
  }
  auto start_deadline = Clock::now() + std::chrono::seconds(options.start_timeout_s);
  auto ws = KernelWsClient::connect(url, token, kid, std::chrono::seconds(options.start_timeout_s));
  if (!ws) return ws.error();
  auto info = kernel_info(**ws, start_deadline);
  if (!info) return make_error(info.error().code, "kernel " + report.kernel_name + " not ready: " + info.error().message);
  if (auto li = info->find("language_info"); li != info->end() && li->is_object() && li->contains("name")) {
    nb.doc["metadata"]["language_info"] = *li;
  }
  json& cells = nb.doc["cells"];
  CellOutputs outputs;
  const auto blank = [](const auto& cell) { return cell.source.find_first_not_of(" \t\r\n") == std::string::npos; };
  uint64_t total = 0;
  for (const auto& cell : nb.code_cells()) total += blank(cell) ? 0 : 1;
  auto tick = [&] {
    if (options.progress) options.progress({"cells", static_cast<uint64_t>(report.cells_run), total, 0});
  };
  for (const auto& cell : nb.code_cells()) {
    if (blank(cell)) continue;  // nbclient skips blank cells
    if (cancelled()) return report;
    tick();
    const std::string which = fmt::format("cell {} ({})", cell.index + 1, first_line(cell.source));
    outputs.begin_cell(cell.index, &cells);
    const auto deadline = Clock::now() + std::chrono::seconds(options.cell_timeout_s);
    // As nbclient: a cell allowed to fail must not make the kernel abort the requests that follow it
    // (ipykernel aborts what arrives shortly after an error when stop_on_error is set).
    const bool may_fail = options.allow_errors || has_tag(cells[cell.index], "raises-exception");
    json content = {{"code", cell.source}, {"silent", false}, {"store_history", true},
                    {"user_expressions", json::object()}, {"allow_stdin", false}, {"stop_on_error", !may_fail}};
    auto id = (*ws)->send("shell", "execute_request", std::move(content), deadline);
    if (!id) return id.error();
    auto run = collect(**ws, *id, outputs, deadline);
    ++report.cells_run;
    const int count = run && run->reply.contains("execution_count") && run->reply["execution_count"].is_number_integer()
                          ? run->reply["execution_count"].get<int>() : outputs.execution_count();
    nb.set_outputs(cell.index, outputs.outputs(), count);
    if (!run) {
      report.ok = false;
      if (run.error().code == Errc::kTimeout) {
        RestCall interrupt{"POST", "api/kernels/" + escape_segment(kid) + "/interrupt", json::object()};
        interrupt.timeout = std::chrono::seconds(10);
        (void)http.call(interrupt, token);
        report.failure = fmt::format("{} timed out after {} s", which, options.cell_timeout_s);
        return report;
      }
      if (run.error().code == Errc::kTooLarge) {
        report.failure = fmt::format("{} failed: {}", which, run.error().message);
        return report;
      }
      return run.error();
    }
    if (cancelled()) return report;
    if (!run->died.empty()) {
      report.ok = false;
      report.failure = fmt::format("{} failed: {}", which, run->died);
      return report;
    }
    if (auto cg = run->reply_metadata.find("cellgate"); cg != run->reply_metadata.end() && cg->is_object()) {
      cells[cell.index]["metadata"]["cellgate"] = *cg;
    }
    const std::string status = run->reply.value("status", "");
    if (status == "ok") continue;
    std::string why = status == "error"
                          ? fmt::format("{}: {}", run->reply.value("ename", ""), run->reply.value("evalue", ""))
                          : "execute_reply status " + status;
    if (may_fail) continue;
    report.ok = false;
    report.failure = fmt::format("{} failed: {}", which, why);
    return report;
  }
  tick();
  return report;
}

}  // namespace

common::Result<RunReport> run_notebook(launcher::Notebook& nb, const BaseUrl& url, const std::string& token,
                                       const RunOptions& options) {
  auto files = read_notebook_files(nb, options.notebook_dir);
  if (!files) return files.error();
  HttpClient http(url);
  json body = json::object();
  std::string kernel = options.kernel.empty() ? nb.kernel_name() : options.kernel;
  if (!kernel.empty()) body["name"] = kernel;
  if (options.workspace.empty()) body["ephemeral"] = true;
  else body["workspace"] = options.workspace;
  RestCall start{"POST", "api/kernels", body};
  start.timeout = std::chrono::seconds(options.start_timeout_s);
  auto started = http.call(start, token);
  if (!started) return started.error();
  if (started->status != 201 && started->status != 200) {
    return make_error(Errc::kBadRequest, fmt::format("cannot start kernel '{}': {}", kernel.empty() ? "(default)" : kernel,
                                                     reply_error(*started)));
  }
  const json model = started->body;
  if (!model.is_object() || !model.contains("id") || !model["id"].is_string()) {
    return make_error(Errc::kInternal, "the gateway answered a kernel start without a kernel id");
  }
  auto report = run_on_kernel(nb, http, url, token, model, options, *files);
  RestCall del{"DELETE", "api/kernels/" + escape_segment(model["id"].get<std::string>()), nullptr};
  del.timeout = std::chrono::seconds(30);
  (void)http.call(del, token);
  return report;
}

}  // namespace cellgate::client
