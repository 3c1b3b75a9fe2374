// SPDX-License-Identifier: BSD-3-Clause
// reproduce: re-runs a kernel's journal and compares the outputs.
#include "gateway/reproduce.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>

#include "common/log.h"
#include "common/random.h"
#include "gateway/agent_exec.h"
#include "gateway/kernel_hub.h"
#include "gateway/kernel_manager.h"
#include "gateway/offload.h"
#include "journal/compare.h"
#include "protocol/json_text.h"
#include "workspace/workspace_manager.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using common::Errc;
using common::make_error;
using nlohmann::json;

namespace {

constexpr int64_t kMaxEntries = 10000;  // one reproduction re-runs at most this many entries
constexpr double kMinCellSeconds = 60, kMaxCellSeconds = 600;

// Seconds since the epoch of a journal time (common::iso8601's form); nullopt for anything else.
std::optional<double> epoch_seconds(const std::string& t) {
  struct tm tm {};
  int us = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &us) != 7)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + us / 1e6;
}

// Seconds between two journal times (0 when either is missing).
double seconds_between(const std::string& a, const std::string& b) {
  auto ta = epoch_seconds(a), tb = epoch_seconds(b);
  return ta && tb ? std::max(0.0, *tb - *ta) : 0;
}

json detail_of(const state::JournalEntryRow& e) {
  auto d = protocol::parse_untrusted_json(e.detail);
  return d.is_object() ? d : json::object();
}

}  // namespace

common::Result<ReproduceRequest> parse_reproduce_request(const std::string& body) {
  ReproduceRequest r;
  if (body.empty()) return r;
  auto j = protocol::parse_untrusted_json(body);
  if (!j.is_object()) return make_error(Errc::kBadRequest, "body must be a JSON object {\"upto\"?, \"keep\"?}");
  for (const auto& [key, value] : j.items()) {
    if (key == "upto") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1)
        return make_error(Errc::kBadRequest, "upto must be a journal seq (a whole number from 1)");
      r.upto = value.get<int64_t>();
    } else if (key == "keep") {
      if (!value.is_boolean()) return make_error(Errc::kBadRequest, "keep must be true or false");
      r.keep = value.get<bool>();
    } else {
      return make_error(Errc::kBadRequest, "unknown field '" + key + "' (expected upto, keep)");
    }
  }
  return r;
}

asio::awaitable<common::Result<json>> reproduce(ReproduceServices s, state::User caller, state::JournalRow journal,
                                                ReproduceRequest request) {
  if (journal.baseline.empty())
    co_return make_error(Errc::kConflict, "this journal has no baseline snapshot to reproduce from" +
                                              (journal.note.empty() ? std::string() : ": " + journal.note));
  auto entries = state::list_journal_entries(s.db, journal.kernel_id, 0, kMaxEntries);
  if (!entries) co_return entries.error();
  std::erase_if(entries.value(), [&](const auto& e) { return e.seq > request.upto; });
  if (entries->empty()) co_return make_error(Errc::kConflict, "no journal entries up to seq " + std::to_string(request.upto));
  // The recorded outputs, as nbformat outputs (large ones read back from the store).
  std::vector<json> recorded(entries->size());
  co_await s.offload.run([&] {
    for (size_t i = 0; i < entries->size(); ++i) recorded[i] = journal::nbformat_outputs((*entries)[i].outputs, s.read);
    return 0;
  });

  // A new workspace of the caller's, restored from the baseline, and a kernel of the same kernelspec on it.
  const workspace::WorkspaceRef from{journal.owner, journal.workspace};
  const workspace::WorkspaceRef to{caller.name, "repro-" + common::random_hex(4)};
  auto& workspaces = s.workspaces;
  auto forked = co_await s.offload.run([&] { return workspaces.fork(from, journal.baseline, to); });
  if (!forked)
    co_return make_error(forked.error().code == Errc::kNotFound ? Errc::kConflict : forked.error().code,
                         "cannot restore the baseline snapshot " + journal.baseline + ": " + forked.error().message);
  KernelManager::StartOptions options;
  options.name = journal.kernelspec;
  options.workspace = to.name;
  options.snapshots = false;
  options.journal = false;  // a reproduction is not itself journalled
  auto started = co_await s.kernels.start(caller, options);
  if (!started) {
    (void)co_await s.offload.run([&] { return workspaces.remove(to); });
    co_return started.error();
  }
  auto hub = started.value();
  const std::string repro_id = hub->kernel().id();
  common::log_info("kernel={} msg=\"reproducing journal\" journal={} user={}", repro_id, journal.kernel_id, caller.name);

  json cells = json::array();
  json first = nullptr;
  int matched = 0, diverged = 0, skipped = 0;
  for (size_t i = 0; i < entries->size(); ++i) {
    const auto& e = (*entries)[i];
    const json detail = detail_of(e);
    if (e.kind == "restart" || e.kind == "died" ||
        (e.kind == "gateway_restart" && detail.value("reason", "").find("dead") != std::string::npos)) {
      // The recorded kernel lost its memory here: so does this one.
      auto st = co_await s.kernels.restart(hub, caller.name);
      cells.push_back({{"seq", e.seq}, {"kind", e.kind}, {"restarted", st.has_value()}});
      continue;
    }
    if (e.kind != "execute") continue;
    json cell = {{"seq", e.seq}, {"kind", "execute"}, {"code", e.code}, {"recorded_status", e.status},
                 {"recorded_execution_count", e.execution_count ? json(*e.execution_count) : json(nullptr)}};
    // Seeds run again by themselves on the new kernel; what the kernel aborted in the recording never ran.
    std::string skip;
    if (e.client == journal::client::kSeed) skip = "a seed cell: the new kernel ran its seed itself";
    else if (e.status == "aborted") skip = "the kernel aborted it in the recording (an earlier cell failed)";
    else if (detail.contains("code_bytes")) skip = "its code was cut in the journal (over --journal-entry-bytes)";
    if (!skip.empty()) {
      cell["match"] = nullptr;
      cell["skipped"] = skip;
      ++skipped;
      cells.push_back(std::move(cell));
      continue;
    }
    ExecRequest exec;
    exec.code = e.code;
    exec.store_history = !e.silent;
    exec.timeout_s = std::clamp(4 * seconds_between(e.started, e.ended), kMinCellSeconds, kMaxCellSeconds);
    exec.origin = journal::Origin{caller.name, journal::client::kReproduce, ""};
    json result = co_await run_execute(hub, std::move(exec));
    const std::string status = result.value("status", "");
    cell["status"] = status;
    cell["execution_count"] = result.value("execution_count", json(nullptr));
    if (e.silent) {
      // Silent executes (the gateway's own, a client's) leave no outputs to compare: run for their effect.
      cell["match"] = nullptr;
      cell["silent"] = true;
      cells.push_back(std::move(cell));
      continue;
    }
    auto c = journal::compare_outputs(recorded[i], result.value("outputs", json::array()));
    const bool incomplete = detail.contains("dropped_outputs") || e.status == "unobserved";
    const bool same_status = status == e.status;
    if (incomplete) {
      cell["match"] = nullptr;
      cell["note"] = "the journal did not keep all of this cell's outputs: not compared";
      ++skipped;
    } else if (c.match && same_status) {
      cell["match"] = true;
      ++matched;
    } else {
      cell["match"] = false;
      cell["recorded"] = same_status || !c.match ? c.recorded : "status " + e.status;
      cell["reproduced"] = same_status || !c.match ? c.reproduced : "status " + status;
      ++diverged;
      if (first.is_null()) first = e.seq;
    }
    cells.push_back(std::move(cell));
    if (status == "dead") break;  // nothing more can run
  }

  json out = {{"kernel_id", journal.kernel_id},
              {"baseline", journal.baseline},
              {"upto", entries->back().seq},
              {"cells", std::move(cells)},
              {"matched", matched},
              {"diverged", diverged},
              {"skipped", skipped},
              {"first_divergence", first},
              {"reproduced_on", {{"kernel_id", repro_id}, {"workspace", to.name}, {"kept", request.keep}}}};
  if (!request.keep) {
    co_await s.kernels.remove(repro_id, caller.name);
    if (auto st = co_await s.offload.run([&] { return workspaces.remove(to); }); !st)
      common::log_warn("workspace={}/{} msg=\"cannot remove a reproduction's workspace\" error=\"{}\"", to.owner, to.name,
                       st.error().message);
  }
  co_return out;
}

}  // namespace cellgate::gateway
