// SPDX-License-Identifier: BSD-3-Clause
// recorder: one kernel's journal as its messages pass.
#include "journal/recorder.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "protocol/json_scan.h"
#include "protocol/json_text.h"

namespace cellgate::journal {

namespace {

int64_t ns_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
int64_t now_ns() { return ns_of(std::chrono::system_clock::now()); }

// Cuts s to at most n bytes without splitting a UTF-8 sequence (the database refuses invalid UTF-8).
void cut_utf8(std::string& s, size_t n) {
  if (s.size() <= n) return;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
}

// A top-level integer member ("" and anything else: nullopt), the scanner first, a parse when it declines.
std::optional<int64_t> peek_int_member(std::string_view object, std::string_view key) {
  protocol::detail::ScanField fields[] = {{key}};
  if (protocol::detail::scan_top_level(object, fields)) {
    if (fields[0].kind != protocol::detail::ScanField::Kind::kOther) return std::nullopt;
    int64_t v = 0;
    auto text = fields[0].value;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return v;
  }
  auto j = protocol::parse_untrusted_json(object);
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

// A top-level string member as a view into object when the scanner answers (no escapes in it), else
// through the parser into *spill. The recorder reads a few members of every message an execution
// sends back: a view costs no allocation.
std::string_view peek_string_view(std::string_view object, std::string_view key, std::string& spill) {
  protocol::detail::ScanField fields[] = {{key}};
  if (protocol::detail::scan_top_level(object, fields))
    return fields[0].kind == protocol::detail::ScanField::Kind::kString ? fields[0].value : std::string_view();
  spill = protocol::peek_string_member(object, key);
  return spill;
}

// The header's msg_type ("" when it has none): what decides what a message means to the journal.
std::string_view peek_msg_type(std::string_view header, std::string& spill) {
  protocol::detail::ScanField fields[] = {{"msg_type"}};
  if (protocol::detail::scan_top_level(header, fields))
    return fields[0].kind == protocol::detail::ScanField::Kind::kString ? fields[0].value : std::string_view();
  auto h = protocol::peek_header(header);
  spill = h ? std::move(h->msg_type) : std::string();
  return spill;
}

// An execute_request's silent and code, in one pass when the scanner answers.
void peek_request(std::string_view content, bool& silent, std::string& code) {
  protocol::detail::ScanField fields[] = {{"silent"}, {"code"}};
  if (protocol::detail::scan_top_level(content, fields)) {
    silent = fields[0].kind == protocol::detail::ScanField::Kind::kOther && fields[0].value == "true";
    if (fields[1].kind == protocol::detail::ScanField::Kind::kString) code.assign(fields[1].value);
    return;
  }
  silent = protocol::peek_true_member(content, "silent");
  code = protocol::peek_string_member(content, "code");
}

bool is_output(std::string_view t) {
  return t == "stream" || t == "display_data" || t == "execute_result" || t == "error" ||
         t == "update_display_data" || t == "clear_output";
}

// The reply's status as a word we know: a kernel's own text is not worth storing unbounded.
std::string reply_status(const protocol::Message& reply) {
  std::string spill;
  const std::string_view s = peek_string_view(reply.content, "status", spill);
  if (s == "ok" || s == "error" || s == "aborted") return std::string(s);
  return "unknown";
}

}  // namespace

const char* to_string(Kind kind) {
  switch (kind) {
    case Kind::kExecute: return "execute";
    case Kind::kRestart: return "restart";
    case Kind::kDied: return "died";
    case Kind::kGatewayRestart: return "gateway_restart";
  }
  return "?";
}

const char* claimed_client(std::string_view header, const char* fallback) {
  for (const char* name : {client::kCellgateRun, client::kMcp})
    if (header == name) return name;
  return fallback;
}

KernelJournal::KernelJournal(Sink& sink, std::string kernel_id, std::string owner, Bounds bounds, Start start)
    : sink_(sink), kernel_id_(std::move(kernel_id)), owner_(std::move(owner)), bounds_(bounds),
      next_seq_(start.next_seq), last_snapshot_(std::move(start.last_snapshot)), snapshots_(start.snapshots),
      baseline_wanted_(start.baseline_wanted) {}

void KernelJournal::restart_journal() { baseline_wanted_ = snapshots_; }

void KernelJournal::set_baseline(const std::string& snapshot, const std::string& note, uint64_t bytes) {
  baseline_wanted_ = false;
  if (!snapshot.empty()) last_snapshot_ = snapshot;
  sink_.baseline(kernel_id_, snapshot, note, bytes);
}

Entry KernelJournal::new_entry(Kind kind) {
  Entry e;
  e.kernel_id = kernel_id_;
  e.owner = owner_;
  e.seq = next_seq_++;
  e.kind = kind;
  return e;
}

void KernelJournal::on_request(const protocol::Message& request, const std::string& msg_id, const Origin& origin,
                               bool hidden) {
  bool silent = false;
  std::string code;
  peek_request(request.content, silent, code);
  silent = silent || hidden;
  if (silent && code.empty()) return;  // runs nothing (the gateway's probes while a kernel aborts)
  if (open_.count(msg_id)) finish(msg_id, "unknown", "another request reused its msg_id");
  Entry e = new_entry(Kind::kExecute);
  e.msg_id = msg_id;
  e.origin = origin;
  e.silent = silent;
  e.code_bytes = code.size();
  cut_utf8(code, bounds_.entry_bytes);
  e.code = std::move(code);
  e.requested_ns = now_ns();
  e.snapshot_before = last_snapshot_;
  if (open_.size() >= bounds_.kernel_open_entries || open_bytes_ + e.code.size() > bounds_.kernel_open_bytes) {
    // Recorded, not followed: a client that queues thousands of executes costs their code, not memory.
    e.status = "unobserved";
    e.reason = "too many executions queued on this kernel at once; its outputs were not recorded";
    e.ended_ns = e.requested_ns;
    sink_.end(std::move(e));
    return;
  }
  open_bytes_ += e.code.size();
  open_.emplace(msg_id, Open{std::move(e)});
  if (!sweep_listed_) {
    sweep_listed_ = true;
    sink_.want_sweep(weak_from_this());
  }
}

void KernelJournal::add_output(Open& open, std::string_view msg_type, const protocol::Message& m) {
  Entry& e = open.entry;
  const uint64_t n = m.content.size();
  if (e.held_bytes() + n > bounds_.entry_bytes || open_bytes_ + n > bounds_.kernel_open_bytes) {
    ++e.dropped_outputs;
    e.dropped_bytes += n;
    return;
  }
  e.outputs.push_back(Output{std::string(msg_type), m.content});
  e.output_bytes += n;
  open_bytes_ += n;
}

void KernelJournal::on_message(bool iopub, std::string_view parent, const protocol::Message& message,
                               const std::string* snapshot) {
  std::string parent_spill;
  bool scanned = false;
  if (parent.empty()) {
    if (!last_parent_text_.empty() && message.parent_header == last_parent_text_) {
      parent = last_parent_id_;
    } else {
      parent = peek_string_view(message.parent_header, "msg_id", parent_spill);
      scanned = true;
    }
  }
  auto it = open_.find(parent);
  if (it == open_.end()) return;
  if (scanned) {  // the same text always reads the same: remembered (in the capacity the last one left)
    last_parent_text_.assign(message.parent_header);
    last_parent_id_.assign(it->first);
  }
  std::string type_spill, state_spill;
  const std::string_view type = peek_msg_type(message.header, type_spill);
  if (type.empty()) return;
  Open& o = it->second;
  if (iopub) {
    if (type == "status") {
      const std::string_view state = peek_string_view(message.content, "execution_state", state_spill);
      if (state == "busy" && !o.entry.started_ns) {
        o.entry.started_ns = now_ns();
      } else if (state == "idle") {
        o.idle = true;
        if (o.replied) finish(it, o.entry.status, "");
        else o.half_ns = now_ns();
      }
    } else if (is_output(type)) {
      add_output(o, type, message);
    }
    return;
  }
  if (type != "execute_reply") return;
  o.replied = true;
  o.entry.status = reply_status(message);
  o.entry.execution_count = peek_int_member(message.content, "execution_count");
  if (snapshot) o.entry.snapshot_after = *snapshot;
  if (o.idle) finish(it, o.entry.status, "");
  else o.half_ns = now_ns();
}

void KernelJournal::finish(const std::string& msg_id, std::string status, const std::string& reason) {
  auto it = open_.find(msg_id);
  if (it != open_.end()) finish(it, std::move(status), reason);
}

void KernelJournal::finish(OpenMap::iterator it, std::string status, const std::string& reason) {
  Entry e = std::move(it->second.entry);
  open_bytes_ -= e.held_bytes();
  open_.erase(it);
  e.status = std::move(status);
  if (!reason.empty()) e.reason = reason;
  e.ended_ns = now_ns();
  // The kernel runs one request at a time, in order, and replies in order: the snapshot it last saw
  // is the one this execution started from.
  e.snapshot_before = last_snapshot_;
  if (!e.snapshot_after.empty()) last_snapshot_ = e.snapshot_after;
  sink_.end(std::move(e));
}

void KernelJournal::end_all(const std::string& status, const std::string& reason) {
  std::vector<std::pair<int64_t, std::string>> ids;  // in the order they were sent
  for (const auto& [id, o] : open_) ids.emplace_back(o.entry.seq, id);
  std::sort(ids.begin(), ids.end());
  for (const auto& [seq, id] : ids) {
    auto& o = open_.at(id);
    // A reply already in says how it went; the rest never finished.
    finish(id, o.replied ? o.entry.status : status, o.replied ? "" : reason);
  }
}

void KernelJournal::mark(Kind kind, const std::string& reason) {
  Entry e = new_entry(kind);
  e.reason = reason;
  e.status = to_string(kind);
  e.requested_ns = e.started_ns = e.ended_ns = now_ns();
  e.snapshot_before = e.snapshot_after = last_snapshot_;
  sink_.end(std::move(e));
}

void KernelJournal::on_restart(const std::string& reason) {
  end_all("restarted", "the kernel was restarted before it finished");
  mark(Kind::kRestart, reason.empty() ? "restart requested" : reason);
}

void KernelJournal::on_died(const std::string& reason) {
  end_all("dead", "the kernel died before it finished");
  mark(Kind::kDied, reason);
}

void KernelJournal::on_shutdown() {
  end_all("shutdown", "the kernel was shut down before it finished");
  sweep_listed_ = false;  // the sink forgets it (closed()); an entry after this asks again
}

bool KernelJournal::sweep(std::chrono::system_clock::time_point now, bool begin_all) {
  const int64_t t = ns_of(now);
  std::vector<std::string> half;
  for (auto& [id, o] : open_) {
    if (o.half_ns && t - o.half_ns > std::chrono::nanoseconds(kHalfAnswered).count()) {
      half.push_back(id);
    } else if (!o.begun && (begin_all || t - o.entry.requested_ns > std::chrono::nanoseconds(kBeginAfter).count())) {
      o.begun = true;
      sink_.begin(o.entry);
    }
  }
  for (const auto& id : half) {
    const Open& o = open_.at(id);
    if (o.replied) finish(id, o.entry.status, "the kernel never said idle after its reply");
    else finish(id, "no_reply", "the kernel said idle but sent no execute_reply");
  }
  if (open_.empty()) sweep_listed_ = false;  // the sink stops sweeping it; the next entry asks again
  return !open_.empty();
}

}  // namespace cellgate::journal
