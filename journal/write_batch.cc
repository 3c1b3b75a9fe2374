// SPDX-License-Identifier: BSD-3-Clause
// write_batch: the writer's events made ready for the database.
#include "journal/write_batch.h"

#include <map>
#include <optional>

#include <fmt/core.h>

#include "common/time_format.h"
#include "protocol/json_text.h"
#include "workspace/object_store.h"
#include "workspace/pins.h"
#include "workspace/workspace_manager.h"

namespace cellgate::journal {

namespace {

std::string iso(int64_t ns) {
  if (ns <= 0) return "";
  return common::iso8601(common::SystemTime(std::chrono::duration_cast<common::SystemTime::duration>(
      std::chrono::nanoseconds(ns))));
}

// detail: what the columns do not say, only when there is something to say.
std::string detail_text(const Entry& e) {
  std::string out = "{";
  auto field = [&](const char* key) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += key;
    out += "\":";
  };
  if (e.requested_ns && e.started_ns && e.started_ns - e.requested_ns > 1'000'000) {
    field("requested");
    protocol::detail::append_json_string(out, iso(e.requested_ns));
  }
  if (e.code_bytes > e.code.size()) {
    field("code_bytes");
    out += std::to_string(e.code_bytes);
  }
  if (e.unrecorded_before) {
    field("unrecorded_before");
    out += std::to_string(e.unrecorded_before);
  }
  if (e.dropped_outputs) {
    field("dropped_outputs");
    out += std::to_string(e.dropped_outputs);
    field("dropped_bytes");
    out += std::to_string(e.dropped_bytes);
  }
  if (!e.reason.empty()) {
    field("reason");
    protocol::detail::append_json_string(out, e.reason);
  }
  return out + "}";
}

}  // namespace

std::string entry_key(const std::string& kernel_id, int64_t seq) { return kernel_id + "/" + std::to_string(seq); }

void prepare_batch(std::vector<Event>& events, uint64_t inline_output_bytes, workspace::WorkspaceManager& workspaces,
                   std::vector<WriteOp>& ops) {
  // Outputs above the inline bound become objects: staged under the store's shared lock (gc waits),
  // named in the journal's pin, then committed (syncfs) in one go for the whole batch.
  std::map<const Output*, std::string> stored;
  std::string lost;
  {
    std::optional<workspace::FileLock> lock;
    std::optional<workspace::ObjectBatch> batch;
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> pinned;  // (owner, kernel) → hashes
    for (const auto& ev : events) {
      if (ev.type != Event::Type::kEnd) continue;
      for (const auto& o : ev.entry.outputs) {
        if (o.content.size() <= inline_output_bytes || !lost.empty()) continue;
        if (!batch) {
          auto l = workspaces.store().lock(workspace::FileLock::Mode::kShared);
          if (!l) {
            lost = l.error().message;
            continue;
          }
          lock.emplace(std::move(l.value()));
          batch.emplace(workspaces.store());
        }
        auto hash = batch->put_bytes(o.content);
        if (!hash) {
          lost = hash.error().message;
          continue;
        }
        stored[&o] = hash.value();
        pinned[{ev.entry.owner, ev.entry.kernel_id}].push_back(hash.value());
      }
    }
    workspace::Pins pins(workspaces.pins());
    for (const auto& [who, hashes] : pinned) {
      if (!lost.empty()) break;
      if (auto st = pins.add("journal", who.first, who.second, hashes); !st) lost = st.error().message;
    }
    if (batch && lost.empty())
      if (auto st = batch->commit(); !st) lost = st.error().message;
    if (!lost.empty()) stored.clear();
  }

  for (auto& ev : events) {
    const bool is_entry = ev.type == Event::Type::kBegin || ev.type == Event::Type::kEnd;
    WriteOp op{ev.type, std::move(ev.journal), {}, std::move(ev.done), is_entry ? ev.entry.owner : std::string(),
          ev.charged, ev.entry.unrecorded_before};
    if (is_entry) {
      Entry& e = ev.entry;
      state::JournalEntryRow& r = op.row;
      // The entry is the writer's now: its strings move into the row.
      r.kernel_id = std::move(e.kernel_id);
      r.seq = e.seq;
      r.owner = std::move(e.owner);
      r.kind = to_string(e.kind);
      r.msg_id = std::move(e.msg_id);
      r.run_by = std::move(e.origin.user);
      r.client = std::move(e.origin.client);
      r.session = std::move(e.origin.session);
      r.silent = e.silent;
      r.detail = detail_text(e);  // before the code moves: it compares the code kept with code_bytes
      r.code = std::move(e.code);
      r.started = iso(e.started_ns ? e.started_ns : e.requested_ns);
      r.ended = iso(e.ended_ns);
      r.status = std::move(e.status);
      r.execution_count = e.execution_count;
      r.snapshot_before = std::move(e.snapshot_before);
      r.snapshot_after = std::move(e.snapshot_after);
      int64_t blob_bytes = 0;
      std::string& outputs = r.outputs;
      size_t reserve = 2;
      for (const auto& o : e.outputs) reserve += 48 + std::min<size_t>(o.content.size(), inline_output_bytes);
      outputs.reserve(reserve);
      outputs = "[";
      for (const auto& o : e.outputs) {
        if (outputs.size() > 1) outputs += ',';
        outputs += "{\"msg_type\":";
        protocol::detail::append_json_string(outputs, o.msg_type);
        if (o.content.size() <= inline_output_bytes) {
          outputs += ",\"content\":";
          outputs += o.content;
        } else if (auto it = stored.find(&o); it != stored.end()) {
          outputs += fmt::format(",\"content_sha256\":\"{}\",\"content_bytes\":{}", it->second, o.content.size());
          if (!r.blobs.empty()) r.blobs += ' ';
          r.blobs += it->second;
          blob_bytes += static_cast<int64_t>(o.content.size());
        } else {
          outputs += ",\"lost\":";
          protocol::detail::append_json_string(outputs, "not stored: " + lost);
        }
        outputs += '}';
      }
      outputs += ']';
      r.bytes = static_cast<int64_t>(kEventOverhead + r.code.size() + r.outputs.size() + r.detail.size()) + blob_bytes;
    }
    ops.push_back(std::move(op));
  }
}

}  // namespace cellgate::journal
