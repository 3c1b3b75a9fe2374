// SPDX-License-Identifier: BSD-3-Clause
// kernel_hub: fans one kernel's messages out to its WebSocket clients and routes replies back.
#include "gateway/kernel_hub.h"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/random.h"
#include "journal/recorder.h"

namespace cellgate::gateway {

using launcher::Channel;
using launcher::KernelState;

namespace {

// Calls fn on each session. fn may detach the session it is given (deliver() closes a client too slow
// for its queue bound and hands its unsent messages back through detach(), which erases it from
// sessions): a range-for went on past the shortened vector into a moved-from pointer, a SIGSEGV of the
// whole gateway from one user's two sockets on one kernel, one of them not reading.
template <class Fn>
void for_each_session(std::vector<std::shared_ptr<WsSession>>& sessions, Fn&& fn) {
  for (size_t i = 0; i < sessions.size();) {
    WsSession* s = sessions[i].get();
    fn(*s);
    if (i < sessions.size() && sessions[i].get() == s) ++i;
  }
}

constexpr size_t kMaxPendingRequests = 8192;
constexpr size_t kMaxOfflineSessions = 32;
constexpr size_t kMaxSilentPending = 1024;
constexpr size_t kMaxHeld = 1024;  // shell messages waiting for a journal's baseline snapshot

const char* channel_name(Channel c) { return launcher::kChannelNames[static_cast<size_t>(c)]; }

bool channel_from_name(const std::string& name, Channel& out) {
  if (name == "shell") out = Channel::kShell;
  else if (name == "control") out = Channel::kControl;
  else if (name == "stdin") out = Channel::kStdin;
  else return false;
  return true;
}
}  // namespace

KernelHub::KernelHub(std::shared_ptr<launcher::Kernel> kernel, size_t replay_bytes)
    : kernel_(std::move(kernel)), replay_bytes_(replay_bytes), synth_session_(common::random_uuid()) {}

void KernelHub::attach(const std::shared_ptr<WsSession>& session) {
  // jupyter_server: a second connection with the same kernel_id:session_id replaces the stale one.
  for (auto& s : sessions_) {
    if (s->session_id() == session->session_id()) s->close("replaced by a new connection", 1008);
  }
  sessions_.push_back(session);
  kernel_->touch();
  auto it = offline_.find(session->session_id());
  if (it != offline_.end()) {
    Replay replay = std::move(it->second);
    offline_.erase(it);
    offline_order_.erase(std::remove(offline_order_.begin(), offline_order_.end(), session->session_id()),
                         offline_order_.end());
    if (replay.dropped) {
      common::log_warn("kernel={} session={} msg=\"replay buffer overflowed\" dropped={}", kernel_->id(),
                       session->session_id(), replay.dropped);
      auto note = protocol::make_message(
          "stream", synth_session_,
          nlohmann::json{{"name", "stderr"},
                         {"text", "[cellgate] " + std::to_string(replay.dropped) +
                                      " messages were dropped while this client was disconnected "
                                      "(replay buffer full)\n"}}
              .dump());
      session->deliver_replayed(std::make_shared<http::Outgoing>("iopub", std::move(note)));
    }
    for (auto& m : replay.messages) session->deliver_replayed(m);
  }
}

void KernelHub::detach(WsSession* session, std::vector<OutgoingPtr> unsent) {
  auto it = std::find_if(sessions_.begin(), sessions_.end(), [&](const auto& s) { return s.get() == session; });
  if (it == sessions_.end()) return;
  std::string sid = session->session_id();
  sessions_.erase(it);
  if (kernel_->state() == KernelState::kDead) return;
  bool still_connected = std::any_of(sessions_.begin(), sessions_.end(), [&](const auto& s) { return s->session_id() == sid; });
  if (still_connected) return;
  // buffer_offline_messages: keep what this session_id would have received, for its reconnect.
  if (!offline_.count(sid)) {
    if (offline_order_.size() >= kMaxOfflineSessions) {
      offline_.erase(offline_order_.front());
      offline_order_.pop_front();
    }
    offline_order_.push_back(sid);
  }
  Replay& r = offline_[sid];
  for (auto& m : unsent) buffer(r, m);
}

void KernelHub::buffer(Replay& r, const OutgoingPtr& m) {
  r.messages.push_back(m);
  r.bytes += m->bytes();
  while (r.bytes > replay_bytes_ && !r.messages.empty()) {
    r.bytes -= r.messages.front()->bytes();
    r.messages.pop_front();
    ++r.dropped;
  }
}

void KernelHub::remember_request(const std::string& msg_id, const std::string& session_id) {
  if (msg_id.empty()) return;
  if (requests_.size() >= kMaxPendingRequests && !request_order_.empty()) {
    requests_.erase(request_order_.front());
    request_order_.pop_front();
  }
  if (requests_.emplace(msg_id, session_id).second) request_order_.push_back(msg_id);
}

void KernelHub::note_request_sent(const protocol::HeaderFields& header) {
  // Requests get a reply (and an iopub busy first); a comm_msg or input_reply gets nothing back.
  const std::string_view type = header.msg_type;
  if (type.size() > 8 && type.substr(type.size() - 8) == "_request") awaiting_kernel_ = true;
}

void KernelHub::from_client(WsSession& session, const std::string& channel, protocol::Message&& message) {
  if (fence && !fence->holds()) {
    session.close("this node cannot renew its cluster lease; reconnect", 1001);
    return;
  }
  Channel ch;
  if (!channel_from_name(channel, ch)) return;
  std::string msg_type, msg_id;
  if (ch != Channel::kStdin) {
    auto header = protocol::peek_header(message.header);
    if (header) {
      remember_request(header->msg_id, session.session_id());
      note_request_sent(*header);
      note_silent(*header, message);
      // Only shell runs code (a control execute_request is refused by the kernel and never replied
      // to, so it would stay in the table). An execute the clock cannot track (the client has
      // kMaxTracked queued, or reuses a msg_id it has queued) is not sent: it would escape its limit.
      if (execute_limit_.count() > 0 && ch == Channel::kShell && header->msg_type == "execute_request") {
        if (!clock_.sent(header->msg_id, /*limited=*/true)) {
          common::log_warn("kernel={} session={} msg=\"execute_request dropped: {} executions already queued, or "
                           "its msg_id is one of them\"",
                           kernel_->id(), session.session_id(), ExecuteClock::kMaxTracked);
          return;
        }
        limited_.emplace(header->msg_id, message.header);
        arm_clocks();
      }
      if (ch == Channel::kShell) note_execute(*header);
      if (header->msg_type == "execute_request") note_execute_sent(header->msg_id);
      msg_type = std::move(header->msg_type);
      msg_id = std::move(header->msg_id);
    }
  }
  journal::Origin origin{session.user(), session.client().empty() ? journal::client::kWebSocket : session.client(),
                         session.session_id()};
  if (must_hold(ch, msg_type)) {
    hold(Held{ch, std::move(message), std::move(msg_type), std::move(msg_id), std::move(origin), false, false});
    return;
  }
  if (!forward(ch, message, msg_type, msg_id, origin, false))
    common::log_debug("kernel={} msg=\"client message not sent: kernel channels closed, or 256 MiB unread\"",
                      kernel_->id());
}

bool KernelHub::forward(Channel channel, const protocol::Message& message, const std::string& msg_type,
                        const std::string& msg_id, const journal::Origin& origin, bool now, bool hidden) {
  // Recorded as it goes to the kernel: the journal's order is the kernel's.
  if (journal_ && channel == Channel::kShell && msg_type == "execute_request") journal_->on_request(message, msg_id, origin, hidden);
  return now ? kernel_->send_now(channel, message) : kernel_->send(channel, message, msg_type);
}

bool KernelHub::must_hold(Channel channel, const std::string& msg_type) const {
  if (!journal_ || channel != Channel::kShell) return false;
  // Once one message waits, every shell message after it does, so that the kernel sees them in order.
  return !held_.empty() || (msg_type == "execute_request" && journal_->needs_baseline());
}

void KernelHub::hold(Held held) {
  if (held_.size() >= kMaxHeld) {
    common::log_warn("kernel={} msg=\"shell message dropped: too many wait for the journal's baseline snapshot\"",
                     kernel_->id());
    return;
  }
  held_.push_back(std::move(held));
  if (baseline_running_) return;
  baseline_running_ = true;
  auto done = [weak = weak_from_this()](std::string snapshot, std::string note, uint64_t bytes) {
    auto self = weak.lock();
    if (!self) return;
    self->baseline_running_ = false;
    if (self->journal_) self->journal_->set_baseline(snapshot, note, bytes);
    self->release_held();
  };
  if (take_baseline_) take_baseline_(std::move(done));
  else done("", "the workspace is not snapshotted", 0);
}

void KernelHub::release_held() {
  auto held = std::move(held_);
  held_.clear();
  for (auto& h : held) {
    if (!forward(h.channel, h.message, h.msg_type, h.msg_id, h.origin, h.now, h.hidden))
      common::log_debug("kernel={} msg=\"held message not sent: kernel channels closed\"", kernel_->id());
  }
}

void KernelHub::deliver_to_session(const std::string& session_id, const OutgoingPtr& m) {
  bool delivered = false;
  for_each_session(sessions_, [&](WsSession& s) {
    if (s.session_id() != session_id) return;
    s.deliver(m);
    delivered = true;
  });
  if (!delivered) {
    auto it = offline_.find(session_id);
    if (it != offline_.end()) buffer(it->second, m);
  }
}

void KernelHub::broadcast(const OutgoingPtr& m) {
  for_each_session(sessions_, [&](WsSession& s) { s.deliver(m); });
  for (auto& [sid, r] : offline_) buffer(r, m);
}

void KernelHub::note_execute_sent(const std::string& msg_id) {
  // Bounded like the other per-request tables: past the cap, executes are not timed.
  if (metrics_ && !msg_id.empty() && execute_sent_.size() < kMaxTimedExecutes)
    execute_sent_.emplace(msg_id, std::chrono::steady_clock::now());
}

void KernelHub::note_execute(const protocol::HeaderFields& header) {
  // Past the bound (a client with that many executes queued), replies go out without a snapshot; the
  // next execute's snapshot sees what they changed.
  if (header.msg_type == "execute_request" && sent_executes_.size() < kMaxSilentPending)
    sent_executes_.insert(header.msg_id);
}

void KernelHub::note_silent(const protocol::HeaderFields& header, const protocol::Message& message) {
  // A silent execute leaves no trace in the notebook; its reply skips the after-execute snapshot (the
  // next ordinary execute's snapshot sees whatever it changed). Bounded: past the cap, replies snapshot.
  if (header.msg_type == "execute_request" && silent_.size() < kMaxSilentPending &&
      protocol::peek_true_member(message.content, "silent"))
    silent_.insert(header.msg_id);
}

bool KernelHub::send_watched(Channel channel, const protocol::Message& message, const std::string& msg_id,
                             std::shared_ptr<RequestWatcher> watcher, Watch how) {
  std::string msg_type;
  if (auto header = protocol::peek_header(message.header)) {
    note_silent(*header, message);
    if (channel != Channel::kStdin) note_request_sent(*header);
    if (channel == Channel::kShell) note_execute(*header);
    if (header->msg_type == "execute_request") note_execute_sent(header->msg_id);
    // The gateway's own executes hold the shell too: a limited execute behind one is not timed yet.
    if (execute_limit_.count() > 0 && channel == Channel::kShell && header->msg_type == "execute_request" &&
        clock_.sent(header->msg_id, /*limited=*/false))
      arm_clocks();
    msg_type = std::move(header->msg_type);
  }
  watchers_[msg_id] = watcher;
  if (how.hidden) {
    hidden_.insert(msg_id);  // bounded like watchers_: each is one gateway request awaiting its reply
    if (msg_type == "execute_request" && silent_.size() < kMaxSilentPending) silent_.insert(msg_id);
  }
  if (must_hold(channel, msg_type)) {
    if (held_.size() >= kMaxHeld) return false;
    hold(Held{channel, message, msg_type, msg_id, how.origin, how.now, how.hidden});
    return true;
  }
  return forward(channel, message, msg_type, msg_id, how.origin, how.now, how.hidden);
}

void KernelHub::unwatch(const std::string& msg_id) {
  watchers_.erase(msg_id);
  hidden_.erase(msg_id);
  if (clock_.tracking(msg_id)) {  // the gateway stopped waiting for it: it holds no later clock back
    clock_.forget(msg_id);
    arm_clocks();
  }
}

void KernelHub::arm_clocks() {
  for (const auto& id : clock_.take_ended()) {
    if (auto t = limit_timers_.find(id); t != limit_timers_.end()) {
      t->second->cancel();
      limit_timers_.erase(t);
    }
    limited_.erase(id);
  }
  for (const auto& id : clock_.take_started()) on_execute_started(id);
}

void KernelHub::track_execution(Channel channel, const protocol::Message& message, bool is_execute_reply,
                                std::string& parent_id) {
  if (channel != Channel::kIopub && !is_execute_reply) return;
  if (parent_id.empty()) parent_id = protocol::peek_parent_msg_id(message.parent_header);
  if (!clock_.tracking(parent_id)) return;
  if (is_execute_reply) {
    clock_.replied(parent_id, protocol::peek_string_member(message.content, "status") == "aborted");
  } else if (auto header = protocol::peek_header(message.header); header && header->msg_type == "status") {
    const std::string state = protocol::peek_string_member(message.content, "execution_state");
    if (state == "busy") clock_.busy(parent_id);
    else if (state == "idle") clock_.idle(parent_id);
  }
  arm_clocks();
}

void KernelHub::on_kernel_message(Channel channel, protocol::Message&& message) {
  awaiting_kernel_ = false;
  if (metrics_ && channel == Channel::kIopub) {
    uint64_t bytes = message.header.size() + message.parent_header.size() + message.metadata.size() + message.content.size();
    for (const auto& b : message.buffers) bytes += b.size();
    metrics_->iopub_message(bytes);
  }
  std::string parent_id;
  bool is_execute_reply = false;
  if (channel == Channel::kShell && (reply_hook_ || !clock_.empty() || !execute_sent_.empty() || !sent_executes_.empty())) {
    auto header = protocol::peek_header(message.header);
    is_execute_reply = header && header->msg_type == "execute_reply";
  }
  if (!clock_.empty()) track_execution(channel, message, is_execute_reply, parent_id);
  if (is_execute_reply && !execute_sent_.empty()) {
    if (parent_id.empty()) parent_id = protocol::peek_parent_msg_id(message.parent_header);
    if (auto it = execute_sent_.find(parent_id); it != execute_sent_.end()) {
      if (metrics_) metrics_->execute_done(std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second).count());
      execute_sent_.erase(it);
    }
  }
  if (is_execute_reply) {
    if (parent_id.empty()) parent_id = protocol::peek_parent_msg_id(message.parent_header);
    // A reply to no execute the gateway sent (or a second reply to one) is the kernel's own doing:
    // delivered as it is, without a snapshot. So is a silent execute's.
    if (!sent_executes_.erase(parent_id)) is_execute_reply = false;
    if (silent_.erase(parent_id)) is_execute_reply = false;
  }
  if (is_execute_reply && reply_hook_) {
    reply_hook_(std::move(message), [self = shared_from_this(), parent_id](protocol::Message reply, std::string snapshot) {
      self->dispatch(Channel::kShell, std::move(reply), parent_id, &snapshot);
    });
    return;
  }
  dispatch(channel, std::move(message), std::move(parent_id));
}

void KernelHub::dispatch(Channel channel, protocol::Message message, std::string parent_id, const std::string* snapshot) {
  if (journal_ && journal_->watching()) {
    // Only paid while an execution is open: the journal follows the messages whose parent it sent
    // (it reads the parent's msg_id itself when it is not known yet, without a copy).
    journal_->on_message(channel == Channel::kIopub, parent_id, message, snapshot);
  }
  // A node that cannot renew its cluster lease acts for none of its kernels: nothing of theirs reaches
  // a client, however it got here. A reply to a request accepted while the fence held can be held up
  // past it (its snapshot's index row waits on a database that has gone away), and the other nodes may
  // have declared the kernel dead by then (docs/cluster.md §3). Its clients reconnect elsewhere.
  if (fence && !fence->holds()) {
    auto sessions = sessions_;  // a close detaches the session from sessions_
    for (auto& s : sessions) s->close("this node cannot renew its cluster lease; reconnect", 1001);
    return;
  }
  if (!watchers_.empty()) {
    // Only paid while an agent request is in flight: find the request this message answers.
    if (parent_id.empty()) parent_id = protocol::peek_parent_msg_id(message.parent_header);
    auto it = watchers_.find(parent_id);
    if (it != watchers_.end()) {
      if (auto w = it->second.lock()) {
        auto header = protocol::peek_header(message.header);
        w->on_reply(channel, message, header ? header->msg_type : std::string());
      }
      // Replies to our own requests are ours alone; so is the iopub of a hidden one.
      if (channel != Channel::kIopub || hidden_.count(parent_id)) return;
    }
  }
  if (channel == Channel::kIopub) {
    broadcast(std::make_shared<http::Outgoing>(channel_name(channel), std::move(message)));
    return;
  }
  if (parent_id.empty()) parent_id = protocol::peek_parent_msg_id(message.parent_header);
  auto out = std::make_shared<http::Outgoing>(channel_name(channel), std::move(message));
  auto it = requests_.find(parent_id);
  if (it == requests_.end()) {
    common::log_debug("kernel={} channel={} msg=\"reply to an unknown request dropped\"", kernel_->id(),
                      channel_name(channel));
    return;
  }
  std::string sid = it->second;
  // A shell or control reply ends its request; stdin (input_request) comes before the reply.
  if (channel != Channel::kStdin) requests_.erase(it);
  deliver_to_session(sid, out);
}

void KernelHub::on_kernel_state(KernelState state, const std::string& reason) {
  if (state == KernelState::kRestarting || state == KernelState::kDead) {  // no replies will come
    silent_.clear();
    execute_sent_.clear();
    sent_executes_.clear();
    clock_.clear();
    limited_.clear();
    for (auto& [id, timer] : limit_timers_) timer->cancel();
    limit_timers_.clear();
  }
  if (journal_) {
    if (state == KernelState::kRestarting) journal_->on_restart(reason);
    else if (state == KernelState::kDead && reason == "shutdown") journal_->on_shutdown();
    else if (state == KernelState::kDead) journal_->on_died(reason);
  }
  auto watchers = watchers_;  // a watcher may unwatch itself from its callback
  for (auto& [id, w] : watchers)
    if (auto sw = w.lock()) sw->on_state(state, reason);
  const char* es = nullptr;
  // Only an automatic restart (it has a reason) is announced: jupyter_server sends "restarting" from its
  // auto-restarter alone, and JupyterLab takes that status as "autorestarting" and reconnects.
  if (state == KernelState::kRestarting && !reason.empty()) es = "restarting";
  else if (state == KernelState::kDead && reason != "shutdown") es = "dead";
  else if (state == KernelState::kStarting) es = "starting";
  if (!es) return;
  if (lifecycle_hook_ && (state == KernelState::kRestarting || state == KernelState::kDead) && !reason.empty() &&
      reason != "shutdown")
    lifecycle_hook_(state == KernelState::kDead ? Lifecycle::kDied : Lifecycle::kAutoRestart, reason);
  for (auto& m : kernel_state_notice(synth_session_, es, reason)) broadcast(m);
}

std::vector<OutgoingPtr> kernel_state_notice(const std::string& session, const char* execution_state,
                                             const std::string& reason) {
  std::vector<OutgoingPtr> out;
  nlohmann::json content = {{"execution_state", execution_state}};
  if (!reason.empty()) content["reason"] = reason;
  out.push_back(std::make_shared<http::Outgoing>("iopub", protocol::make_message("status", session, content.dump())));
  const std::string es = execution_state;
  if ((es == "dead" || es == "restarting") && !reason.empty() && reason != "shutdown") {
    // Tell the person, not just the client library: a cell whose kernel died shows why.
    nlohmann::json err = {{"ename", "KernelDied"}, {"evalue", reason}, {"traceback", {"Kernel died: " + reason}}};
    out.push_back(std::make_shared<http::Outgoing>("iopub", protocol::make_message("error", session, err.dump())));
  }
  return out;
}

void KernelHub::on_kernel_paused(bool paused) {
  if (lifecycle_hook_) lifecycle_hook_(paused ? Lifecycle::kPaused : Lifecycle::kResumed, "");
}

void KernelHub::on_execute_started(const std::string& msg_id) {
  auto timer = std::make_shared<boost::asio::steady_timer>(kernel_->executor());
  timer->expires_after(execute_limit_);
  limit_timers_[msg_id] = timer;
  std::string parent = limited_[msg_id];
  timer->async_wait([self = shared_from_this(), msg_id, parent](const boost::system::error_code& ec) {
    if (ec || !self->limit_timers_.count(msg_id)) return;
    boost::asio::co_spawn(self->kernel_->executor(), enforce_limit(self, msg_id, parent), boost::asio::detached);
  });
}

void KernelHub::notify_stderr(const std::string& text, const std::string& parent_header) {
  auto m = protocol::make_message("stream", synth_session_, nlohmann::json{{"name", "stderr"}, {"text", text}}.dump(),
                                  parent_header);
  broadcast(std::make_shared<http::Outgoing>("iopub", std::move(m)));
}

boost::asio::awaitable<void> KernelHub::enforce_limit(std::shared_ptr<KernelHub> self, std::string msg_id,
                                                     std::string parent_header) {
  const auto limit = self->execute_limit_.count();
  self->notify_stderr("[cellgate] execution time limit (" + std::to_string(limit) + " s) exceeded; interrupting\n",
                      parent_header);
  co_await self->kernel_->interrupt();
  boost::asio::steady_timer grace(self->kernel_->executor());
  for (int i = 0; i < 50 && self->limited_.count(msg_id); ++i) {
    grace.expires_after(std::chrono::milliseconds(100));
    boost::system::error_code ec;
    co_await grace.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  self->limit_timers_.erase(msg_id);
  if (!self->limited_.count(msg_id)) co_return;  // the interrupt took
  self->limited_.erase(msg_id);
  self->notify_stderr("[cellgate] the interrupt did not stop the cell; restarting the kernel (its memory is lost)\n",
                      parent_header);
  auto st = co_await self->kernel_->restart();
  if (!st) common::log_error("kernel={} msg=\"restart after time limit failed\" error=\"{}\"", self->kernel_->id(),
                             st.error().message);
}

void KernelHub::close_all(const std::string& reason) {
  auto sessions = sessions_;
  for (auto& s : sessions) s->close(reason, 1000);
  offline_.clear();
  offline_order_.clear();
}

}  // namespace cellgate::gateway
