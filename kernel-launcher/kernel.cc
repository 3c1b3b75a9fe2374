// SPDX-License-Identifier: BSD-3-Clause
// kernel: one kernel's lifecycle and its five ZMQ channels.
#include "kernel-launcher/kernel.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/random.h"
#include "common/unique_fd.h"
#include "protocol/json_text.h"
#include "protocol/zmq_codec.h"

namespace cellgate::launcher {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using common::Errc;
using common::make_error;
using namespace std::chrono_literals;

const char* to_string(KernelState s) {
  switch (s) {
    case KernelState::kStarting: return "starting";
    case KernelState::kIdle: return "idle";
    case KernelState::kBusy: return "busy";
    case KernelState::kRestarting: return "restarting";
    case KernelState::kDead: return "dead";
    case KernelState::kTerminating: return "terminating";
  }
  return "unknown";
}

Kernel::Kernel(asio::io_context& io, Spawner& spawner, KernelOptions options)
    : io_(io), spawner_(spawner), options_(std::move(options)), hb_timer_(io) {}

Kernel::~Kernel() { close_channels(); }

void Kernel::set_state(KernelState s, std::string reason) {
  if (s == KernelState::kDead) held_.clear();
  bool changed = s != state_ || reason != reason_;
  state_ = s;
  reason_ = std::move(reason);
  if (changed && observer_) observer_->on_kernel_state(state_, reason_);
}

awaitable<common::Status> Kernel::start() { co_return co_await launch(); }

void Kernel::detach() {
  ++generation_;
  stopping_ = true;
  hb_timer_.cancel();
  if (ready_signal_) ready_signal_->cancel();
  exit_watch_.reset();
  close_channels();
}

awaitable<common::Status> Kernel::adopt(ProcessHandle process) {
  ++generation_;
  got_info_reply_ = got_iopub_ = probe_outstanding_ = false;
  forget_lost_idle();
  launched_at_ = std::chrono::steady_clock::now();
  set_state(KernelState::kStarting);
  std::ifstream in(options_.private_dir + "/connection.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("key") || !j["key"].is_string())
    co_return make_error(Errc::kInternal, "no readable connection info in " + options_.private_dir);
  conn_.transport = j.value("transport", "ipc");
  conn_.ip = j.value("ip", "");
  const char* keys[5] = {"shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"};
  for (size_t i = 0; i < 5; ++i) conn_.ports[i] = j.value(keys[i], 0);
  conn_.key = j["key"].get<std::string>();
  signer_ = protocol::Signer(conn_.key);
  session_ = common::random_uuid();
  process_ = std::move(process);
  // The gateway may have stopped while the kernel was paused: it must answer kernel_info now.
  (void)spawner_.freeze(process_, false, options_.freezer);
  open_channels();
  watch_process();
  auto ready = co_await wait_ready();
  if (!ready) co_return ready.error();
  set_state(KernelState::kIdle);
  hb_last_reply_ = std::chrono::steady_clock::now();
  heartbeat_tick();
  flush_held();
  co_return common::ok();
}

awaitable<common::Status> Kernel::launch() {
  if (auto releasing = released_) {
    boost::system::error_code ec;
    co_await releasing->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  ++generation_;
  got_info_reply_ = got_iopub_ = probe_outstanding_ = false;
  forget_lost_idle();
  launched_at_ = std::chrono::steady_clock::now();
  set_state(KernelState::kStarting);

  std::error_code fec;
  std::filesystem::remove_all(options_.runtime_dir, fec);  // stale sockets make zmq wait silently
  std::filesystem::remove_all(options_.private_dir, fec);
  // 0700: the jail helper hands runtime_dir to the kernel's uid (idmapped bind); private_dir stays ours.
  if (::mkdir(options_.runtime_dir.c_str(), 0700) != 0 || ::mkdir(options_.private_dir.c_str(), 0700) != 0)
    co_return make_error(Errc::kInternal, "create runtime dirs for " + options_.kernel_id, errno);

  auto conn = options_.transport == "tcp" ? make_tcp_connection("127.0.0.1", options_.spec.name)
                                          : make_ipc_connection(options_.runtime_dir, options_.spec.name);
  if (!conn) co_return conn.error();
  conn_ = std::move(conn.value());
  signer_ = protocol::Signer(conn_.key);
  session_ = common::random_uuid();
  const std::string conn_file = options_.runtime_dir + "/connection.json";
  if (auto st = write_connection_file(conn_, conn_file); !st) co_return st.error();
  // The gateway's own copy, out of the kernel's reach (the kernel may rewrite the one it was given).
  if (auto st = write_connection_file(conn_, options_.private_dir + "/connection.json"); !st) co_return st.error();

  open_channels();
  SpawnRequest req{options_.kernel_id, substitute_argv(options_.spec.argv, conn_file), options_.env,
                   options_.runtime_dir, options_.private_dir, options_.workspace_dir, options_.policy_file,
                   options_.limits, options_.egress, options_.cgroup_owner};
  const int gen = generation_;
  auto proc = co_await spawner_.spawn(req);
  if (gen != generation_) {
    // Shut down, detached or relaunched while the spawn was awaited: that launch owns the kernel
    // now, and what this one started is nobody's. Killed with its jail, never left running.
    if (proc) discard(std::move(proc.value()));
    co_return make_error(Errc::kUnavailable, "the kernel was stopped while it was starting");
  }
  if (!proc) {
    close_channels();
    set_state(KernelState::kDead, proc.error().message);
    co_return proc.error();
  }
  process_ = std::move(proc.value());
  paused_ = false;
  common::log_info("kernel={} pid={} spawner={} msg=\"kernel spawned\"", id(), process_.pid, spawner_.name());
  if (spawned_hook_) spawned_hook_(process_);
  watch_process();
  auto ready = co_await wait_ready();
  if (!ready) {
    stopping_ = true;
    co_await stop_process(false);
    stopping_ = false;
    set_state(KernelState::kDead, ready.error().message);
    co_return ready.error();
  }
  if (ready_hook_) {
    auto hooked = co_await ready_hook_();
    if (!hooked) {
      stopping_ = true;
      co_await stop_process(false);
      stopping_ = false;
      set_state(KernelState::kDead, hooked.error().message);
      co_return hooked.error();
    }
  }
  set_state(KernelState::kIdle);
  hb_last_reply_ = std::chrono::steady_clock::now();
  hb_outstanding_ = false;
  heartbeat_tick();
  flush_held();
  co_return common::ok();
}

void Kernel::flush_held() {
  auto held = std::move(held_);
  held_.clear();
  for (auto& [channel, message] : held) send(channel, message);
}

void Kernel::open_channels() {
  close_channels();
  peer_uid_.reset();  // this generation's process, read at the first connect
  using protocol::zmtp::SocketType;
  const SocketType types[5] = {SocketType::kDealer, SocketType::kSub, SocketType::kDealer, SocketType::kDealer,
                               SocketType::kReq};
  for (size_t i = 0; i < 5; ++i) {
    // The kernel sends input_request to the identity of the shell socket that asked: stdin must share it.
    auto s = std::make_unique<ZmtpStream>(io_, types[i], i == 0 || i == 2 ? session_ : std::string(),
                                          options_.max_message_bytes);
    if (i != 4) s->set_on_dropped([this](const FrameViews& head) { notice_dropped(head); });
    s->set_read_budget(options_.read_budget);
    if (i == 1) s->set_read_pace(options_.output_rate);  // iopub: the kernel's output
    s->set_peer_check([this](const ucred& listener) {
      if (!peer_uid_) peer_uid_ = spawner_.kernel_uid(process_);
      if (!peer_uid_) return ZmtpStream::Peer::kUnknown;
      return listener.uid == *peer_uid_ ? ZmtpStream::Peer::kOk : ZmtpStream::Peer::kRefused;
    });
    Channel ch = static_cast<Channel>(i);
    if (auto st = s->connect(conn_.endpoint(ch)); !st)
      common::log_error("kernel={} msg=\"cannot connect a channel\" error=\"{}\"", id(), st.error().message);
    s->start([this, ch](const FrameViews& f) { on_frames(ch, f); });
    streams_[i] = std::move(s);
  }
}

void Kernel::close_channels() {
  for (auto& s : streams_) {
    if (s) s->close();
    s.reset();
  }
}

void Kernel::watch_process() {
  exit_watch_ = std::make_unique<ExitWatch>(io_.get_executor(), process_.pidfd.get());
  exit_watch_->async_wait([self = shared_from_this(), gen = generation_] {
    if (gen == self->generation_) self->on_process_exit();
  });
}

awaitable<common::Status> Kernel::wait_ready() {
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  const int gen = generation_;
  // jupyter_server's "nudge": ask for kernel_info until a reply AND an iopub message have arrived, so
  // the iopub subscription is known to be live before clients are told the kernel is ready.
  while (!(got_info_reply_ && got_iopub_)) {
    if (gen != generation_ || process_.pid <= 0)
      co_return make_error(Errc::kInternal, "kernel exited during start: " + reason_ + log_tail());
    if (std::chrono::steady_clock::now() > deadline)
      co_return make_error(Errc::kTimeout, fmt::format("kernel did not answer kernel_info_request within {} s{}",
                                                       options_.start_timeout.count() / 1000, log_tail()));
    send_internal(Channel::kShell, "kernel_info_request", "{}");
    ready_signal_ = std::make_shared<asio::steady_timer>(io_);
    ready_signal_->expires_after(got_info_reply_ ? 100ms : 500ms);
    boost::system::error_code ec;
    auto signal = ready_signal_;
    co_await signal->async_wait(asio::redirect_error(use_awaitable, ec));
  }
  co_return common::ok();
}

void Kernel::send_internal(Channel channel, const char* msg_type, std::string content) {
  auto m = protocol::make_message(msg_type, session_, std::move(content));
  if (streams_[static_cast<size_t>(channel)]) streams_[static_cast<size_t>(channel)]->send(protocol::encode_zmq(m, signer_));
}

bool Kernel::send(Channel channel, const protocol::Message& message, std::string_view msg_type) {
  if (channel == Channel::kIopub || channel == Channel::kHb) return false;
  if (paused_) resume();
  auto& s = streams_[static_cast<size_t>(channel)];
  if (!s || state_ == KernelState::kStarting || state_ == KernelState::kRestarting) {
    // A (re)starting kernel has no channels yet, or has not answered kernel_info: hold the message
    // (bounded) and send it once the kernel is ready, as ZMQ would have queued it.
    if (state_ == KernelState::kDead || held_.size() >= kMaxHeld) return false;
    held_.emplace_back(channel, message);
    return true;
  }
  touch();
  bool sent;
  if (message.identities.empty()) {
    sent = s->send(protocol::encode_zmq(message, signer_));
  } else {
    protocol::Message copy = message;
    copy.identities.clear();
    sent = s->send(protocol::encode_zmq(copy, signer_));
  }
  // A request's iopub messages (busy, execute_input, outputs, idle) come in groups ~0.3 ms apart, each
  // a wake-up of the io thread (~18 us of CPU on a VM). Held until the reply (on_frames) or
  // kIopubHold, they are read in one go. Only an idle kernel's: a busy one queues the request behind
  // a running cell, whose output must not wait for it. Only for a *_request: comm_msg, comm_open and
  // comm_close get no reply (messaging spec), so a widget's updates would wait the whole hold.
  if (sent && channel == Channel::kShell && state_ == KernelState::kIdle && streams_[1]) {
    std::string peeked;
    if (msg_type.empty()) {
      if (auto header = protocol::peek_header(message.header)) peeked = std::move(header->msg_type);
      msg_type = peeked;
    }
    if (msg_type.ends_with("_request")) streams_[1]->hold(kIopubHold);
  }
  return sent;
}

bool Kernel::send_now(Channel channel, const protocol::Message& message) {
  if (channel == Channel::kIopub || channel == Channel::kHb) return false;
  auto& s = streams_[static_cast<size_t>(channel)];
  if (!s || process_.pid <= 0) return false;
  touch();
  return s->send(protocol::encode_zmq(message, signer_));
}

void Kernel::on_frames(Channel channel, const FrameViews& frames) {
  if (channel == Channel::kHb) {
    hb_outstanding_ = false;
    hb_last_reply_ = std::chrono::steady_clock::now();
    return;
  }
  auto decoded = protocol::decode_zmq(frames, signer_);
  if (!decoded) return note_bad_message(channel, decoded.error().message);
  if (channel != Channel::kIopub && streams_[1] && streams_[1]->held()) {
    // What iopub holds goes first: the kernel sent it before this reply (release() reads it at once).
    auto self = shared_from_this();
    const int gen = generation_;
    streams_[1]->release();
    if (gen != generation_) return;
  }
  protocol::Message& m = decoded.value();
  touch();
  auto header = protocol::peek_header(m.header);
  if (!header) return note_bad_message(channel, header.error().message);
  const std::string& type = header->msg_type;
  bool internal = false;
  if (channel == Channel::kIopub) {
    got_iopub_ = true;
    if (type == "status" && state_ != KernelState::kStarting && state_ != KernelState::kRestarting &&
        state_ != KernelState::kTerminating && state_ != KernelState::kDead) {
      // Two of these per execute: scanned, not parsed.
      const std::string es = protocol::peek_string_member(m.content, "execution_state");
      if (es == "busy") set_state(KernelState::kBusy);
      else if (es == "idle") set_state(KernelState::kIdle);
      forget_lost_idle();
    }
    if (ready_signal_) ready_signal_->cancel();
  } else if (type == "execute_reply") {
    if (replied_at_ == std::chrono::steady_clock::time_point{}) replied_at_ = std::chrono::steady_clock::now();
  } else if (type == "kernel_info_reply") {
    internal = protocol::peek_string_member(m.parent_header, "session") == session_;
    if (internal) {
      got_info_reply_ = true;
      probe_outstanding_ = false;
      if (ready_signal_) ready_signal_->cancel();
    }
  }
  if (!internal) to_observer(channel, std::move(m));
}

// A kernel can send malformed messages as fast as it likes: one log line a second, with the count.
void Kernel::note_bad_message(Channel channel, const std::string& why) {
  auto now = std::chrono::steady_clock::now();
  if (now - bad_logged_at_ < 1s) {
    ++bad_unlogged_;
    return;
  }
  common::log_warn("kernel={} channel={} msg=\"dropped kernel message\" error=\"{}\" also_dropped={}", id(),
                   kChannelNames[static_cast<size_t>(channel)], why, bad_unlogged_);
  bad_logged_at_ = now;
  bad_unlogged_ = 0;
}

void Kernel::to_observer(Channel channel, protocol::Message&& m) {
  if (!observer_) return;
  // The session boundary for kernel traffic: nothing a kernel sends may take the gateway down.
  try {
    observer_->on_kernel_message(channel, std::move(m));
  } catch (const std::exception& e) {
    common::log_error("kernel={} msg=\"error handling a kernel message\" error=\"{}\"", id(), e.what());
  }
}

void Kernel::notice_dropped(const FrameViews& head) {
  // The dropped message's own parent (frames: identities, delimiter, signature, header, parent...) is
  // the request it answered: the notice goes to that cell. Unverified, since the signature covers
  // what was dropped; the kernel holds the key anyway, so this is nothing it could not sign.
  std::string parent = "{}";
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] != protocol::kDelimiter) continue;
    if (i + 3 < head.size() && protocol::detail::is_json_object_text(head[i + 3])) parent = std::string(head[i + 3]);
    break;
  }
  std::string text = fmt::format("[cellgate] a kernel message over {} MiB was dropped (--max-kernel-message)\n",
                                 options_.max_message_bytes >> 20);
  std::string content = "{\"name\":\"stderr\",\"text\":";
  protocol::detail::append_json_string(content, text);
  content += "}";
  to_observer(Channel::kIopub, protocol::make_message("stream", session_, std::move(content), std::move(parent), "{}"));
}

void Kernel::heartbeat_tick() {
  hb_timer_.expires_after(options_.heartbeat_interval);
  int gen = generation_;
  hb_timer_.async_wait([self = shared_from_this(), gen](const boost::system::error_code& ec) {
    if (ec || gen != self->generation_ || self->stopping_ || self->state_ == KernelState::kDead) return;
    if (self->paused_) {  // a frozen kernel cannot answer; resume() restarts the clock
      self->heartbeat_tick();
      return;
    }
    auto now = std::chrono::steady_clock::now();
    if (self->hb_outstanding_ && now - self->hb_last_reply_ > self->options_.heartbeat_timeout) {
      common::log_warn("kernel={} msg=\"no heartbeat; killing the kernel so it restarts\"", self->id());
      self->spawner_.signal(self->process_, KernelSignal::kKill);
      return;
    }
    if (!self->hb_outstanding_ && self->streams_[4]) {
      self->hb_outstanding_ = self->streams_[4]->send({"ping"});
    }
    self->probe_lost_idle(now);
    self->heartbeat_tick();
  });
}

// A kernel's iopub is a PUB socket, which drops what a slow reader has not taken past its high-water
// mark (ZMQ_SNDHWM; ipykernel keeps the default, 1,000 messages): a flooding cell's idle can be among
// them, and the kernel then shows busy until its next status (idle culling skips it meanwhile, and every
// client shows it busy). The shell's execute_reply is never dropped, so a kernel still busy by its last
// status well after a reply has most likely lost its idle. A kernel_info_request, as jupyter_server's
// nudge sends, makes it publish busy and idle again (clients see those statuses, as after a nudge).
// It is repeated, once its reply is back, while the queue still drops them, at most kMaxLostIdleProbes
// times per reply. One probe at a time, at most one per heartbeat: a kernel that is really busy with a
// later request answers the probe only after it.
void Kernel::probe_lost_idle(std::chrono::steady_clock::time_point now) {
  if (state_ != KernelState::kBusy || replied_at_ == std::chrono::steady_clock::time_point{} || probe_outstanding_ ||
      now - replied_at_ < kLostIdleAfter || lost_idle_probes_ >= kMaxLostIdleProbes || !streams_[0])
    return;
  ++lost_idle_probes_;
  probe_outstanding_ = true;
  send_internal(Channel::kShell, "kernel_info_request", "{}");
}

void Kernel::forget_lost_idle() {
  replied_at_ = {};
  lost_idle_probes_ = 0;
}

std::string Kernel::log_tail() const {
  // Only the end is read: the log is bounded by the helper (--kernel-log-bytes), but this runs on
  // the io thread, so it never reads more than it shows.
  constexpr size_t kTail = 2000;
  common::UniqueFd fd(::open((options_.private_dir + "/kernel.log").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode)) return "";
  const size_t size = static_cast<size_t>(st.st_size);
  const size_t want = std::min(size, kTail);
  std::string text(want, '\0');
  ssize_t n = ::pread(fd.get(), text.data(), want, static_cast<off_t>(size - want));
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "" : "; kernel output: " + text;
}

}  // namespace cellgate::launcher
