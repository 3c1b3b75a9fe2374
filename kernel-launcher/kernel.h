// SPDX-License-Identifier: BSD-3-Clause
// kernel: one kernel's lifecycle (start, restart, interrupt, shutdown) and its five ZMQ channels.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "common/time_format.h"
#include "kernel-launcher/connection_info.h"
#include "kernel-launcher/exit_watch.h"
#include "kernel-launcher/kernel_options.h"
#include "kernel-launcher/kernelspec.h"
#include "kernel-launcher/spawner.h"
#include "kernel-launcher/zmtp_stream.h"
#include "protocol/message.h"
#include "protocol/signer.h"

namespace cellgate::launcher {

// A kernel's death is a state, not an exception: the state machine below is the whole story.
enum class KernelState { kStarting, kIdle, kBusy, kRestarting, kDead, kTerminating };
const char* to_string(KernelState s);

// What a kernel tells the layer above (the gateway's fan-out). Runs on the io thread.
class KernelObserver {
 public:
  virtual ~KernelObserver() = default;
  // A verified message from the kernel on shell, iopub, stdin or control, moved in: the observer keeps
  // its parts without copying them (an output may be megabytes).
  virtual void on_kernel_message(Channel channel, protocol::Message&& message) = 0;
  // The state changed (e.g. restarting, dead with a reason).
  virtual void on_kernel_state(KernelState state, const std::string& reason) = 0;
  // pause() froze the kernel (true) or resume() thawed it (false), whoever asked.
  virtual void on_kernel_paused(bool /*paused*/) {}
};

// Owned through shared_ptr: pending coroutines and callbacks keep it alive. Every method runs on the io
// thread; none blocks. Errors on start carry the step that failed and the kernel's log tail.
class Kernel : public std::enable_shared_from_this<Kernel> {
 public:
  Kernel(boost::asio::io_context& io, Spawner& spawner, KernelOptions options);
  ~Kernel();

  const std::string& id() const { return options_.kernel_id; }
  const std::string& name() const { return options_.spec.name; }
  const KernelOptions& options() const { return options_; }
  KernelState state() const { return state_; }
  const std::string& reason() const { return reason_; }
  common::SystemTime last_activity() const { return last_activity_; }
  void touch() { last_activity_ = std::chrono::system_clock::now(); }
  void set_observer(KernelObserver* observer) { observer_ = observer; }
  // The cgroup level of the kernel's next launches (a claimed pooled kernel: its new owner's).
  void set_cgroup_owner(std::string owner) { options_.cgroup_owner = std::move(owner); }
  // Runs after every launch (start, restart, auto-restart) once the kernel answers, before it is declared
  // ready and before held client messages are sent: seed notebooks run here. Its messages go out through
  // send_now(). A failure fails the launch: the process is stopped and the state becomes kDead.
  using ReadyHook = std::function<boost::asio::awaitable<common::Status>()>;
  void set_ready_hook(ReadyHook hook) { ready_hook_ = std::move(hook); }
  // Runs after every spawn (start, restart, auto-restart) with the new process: what a restarted gateway
  // re-adopts the kernel by must name this process, not the one a restart replaced.
  using SpawnedHook = std::function<void(const ProcessHandle& process)>;
  void set_spawned_hook(SpawnedHook hook) { spawned_hook_ = std::move(hook); }
  // Awaited before every relaunch (restart(), and the automatic restart after a death), not before
  // start(), whose caller bounds it: the layer above charges a relaunch to the same bounds as a start.
  // The permit is held until that launch has ended; an error fails the relaunch (restart() returns it
  // and the running kernel is left alone; after a death the kernel is declared dead with it).
  using LaunchPermit = std::shared_ptr<void>;
  using RelaunchGate = std::function<boost::asio::awaitable<common::Result<LaunchPermit>>()>;
  void set_relaunch_gate(RelaunchGate gate) { relaunch_gate_ = std::move(gate); }
  boost::asio::any_io_executor executor() { return io_.get_executor(); }

  // Spawns the process, connects the channels and waits for kernel_info_reply plus one iopub message.
  boost::asio::awaitable<common::Status> start();
  // Takes over a kernel that kept running while the gateway was down: reads the gateway's own copy of its
  // connection info from private_dir, watches the process and waits for kernel_info_reply.
  boost::asio::awaitable<common::Status> adopt(ProcessHandle process);
  // Records a kernel found dead at adoption (state kDead with the reason) and removes what its jail
  // left behind.
  void mark_dead(std::string reason, const ProcessHandle& dead);
  const ProcessHandle& process() const { return process_; }
  // Lets go of a kernel that keeps running (gateway shutdown): closes the channels and stops watching,
  // without signalling the process.
  void detach();
  // Sends a client's message (identities ignored) on shell, control or stdin, signed with this kernel's key.
  // msg_type is the header's when the caller has read it already; else it is read here if needed.
  bool send(Channel channel, const protocol::Message& message, std::string_view msg_type = {});
  // As send(), but never held: for the ready hook, which talks to the kernel while it is still starting.
  bool send_now(Channel channel, const protocol::Message& message);
  boost::asio::awaitable<void> interrupt();
  // Shuts down (shutdown_request, then SIGTERM, then kill, each bounded) and starts again.
  boost::asio::awaitable<common::Status> restart();
  // Shutdown for good: the state ends as kDead ("shutdown") and the runtime dir is removed.
  boost::asio::awaitable<void> shutdown();

  // Pausing an idle kernel: its processes are frozen (cgroup freezer), memory kept. Anything sent to
  // it thaws it first (send, interrupt, restart and shutdown call resume()); heartbeats are not
  // checked while it is paused, and their clock restarts on thaw. Fails unless idle and running.
  common::Status pause();
  void resume();
  bool paused() const { return paused_; }
  // A pooled kernel handed to its owner: its jail now has their workspace, limits and env, and a
  // restart must start it with the same.
  void retarget(std::string workspace_dir, std::map<std::string, std::string> env, Limits limits);
  Spawner& spawner() { return spawner_; }

 private:
  boost::asio::awaitable<common::Status> launch();
  boost::asio::awaitable<common::Status> wait_ready();
  boost::asio::awaitable<void> stop_process(bool graceful);
  static boost::asio::awaitable<void> restart_after_death(std::shared_ptr<Kernel> self);
  boost::asio::awaitable<bool> wait_exit(std::chrono::milliseconds timeout);
  void open_channels();
  void close_channels();
  void on_frames(Channel channel, const FrameViews& frames);
  void notice_dropped(const FrameViews& head);
  void to_observer(Channel channel, protocol::Message&& message);
  void note_bad_message(Channel channel, const std::string& why);
  void watch_process();
  void on_process_exit();
  void release_jail(std::function<bool()> step);
  // A process no launch will use (its launch was overtaken by a shutdown or another launch while its
  // spawn was awaited): killed with its jail, then reaped and its jail released once it has exited.
  void discard(ProcessHandle stray);
  static boost::asio::awaitable<void> finish_release(std::shared_ptr<Kernel> self, std::function<bool()> step,
                                                     std::shared_ptr<boost::asio::steady_timer> done);
  void heartbeat_tick();
  void probe_lost_idle(std::chrono::steady_clock::time_point now);
  void forget_lost_idle();
  void flush_held();
  void set_state(KernelState s, std::string reason = "");
  void send_internal(Channel channel, const char* msg_type, std::string content);
  std::string log_tail() const;

  boost::asio::io_context& io_;
  Spawner& spawner_;
  KernelOptions options_;
  ConnectionInfo conn_;
  protocol::Signer signer_{""};
  std::string session_;  // our own session id for messages we originate
  std::unique_ptr<ZmtpStream> streams_[5];
  std::optional<uid_t> peer_uid_;  // the uid the kernel's socket listeners must have
  ProcessHandle process_;
  std::unique_ptr<ExitWatch> exit_watch_;
  boost::asio::steady_timer hb_timer_;
  std::chrono::steady_clock::time_point hb_last_reply_;
  bool hb_outstanding_ = false;
  KernelState state_ = KernelState::kStarting;
  std::string reason_;
  common::SystemTime last_activity_ = std::chrono::system_clock::now();
  KernelObserver* observer_ = nullptr;
  bool stopping_ = false;      // an exit is expected (shutdown or restart in progress)
  bool paused_ = false;        // frozen by pause(); thawed by resume()
  bool got_info_reply_ = false;
  bool got_iopub_ = false;
  int generation_ = 0;         // bumps on each launch; stale callbacks check it
  std::shared_ptr<boost::asio::steady_timer> released_;  // while the last jail's release retries
  struct Stray {
    ProcessHandle process;
    std::unique_ptr<ExitWatch> watch;
  };
  std::list<Stray> strays_;  // discarded processes until they have exited
  int rapid_restarts_ = 0;
  std::chrono::steady_clock::time_point bad_logged_at_;  // rate limit of malformed-message warnings
  uint64_t bad_unlogged_ = 0;
  std::chrono::steady_clock::time_point launched_at_;
  std::shared_ptr<boost::asio::steady_timer> ready_signal_;
  // The first execute_reply since the last iopub status (none: zero), and the kernel_info_requests sent
  // since, to bring back an idle that the kernel's iopub queue dropped (probe_lost_idle).
  std::chrono::steady_clock::time_point replied_at_{};
  int lost_idle_probes_ = 0;
  bool probe_outstanding_ = false;  // an internal kernel_info_request awaits its reply
  static constexpr std::chrono::seconds kLostIdleAfter{2};
  static constexpr int kMaxLostIdleProbes = 20;
  ReadyHook ready_hook_;
  SpawnedHook spawned_hook_;
  RelaunchGate relaunch_gate_;
  static constexpr size_t kMaxHeld = 1024;
  // ipykernel takes 1-3 ms from a request to its reply here even for `1+1`: a 2 ms hold mostly ended
  // first and cost a wake of its own (3.1 -> 2.2 wakes per execute at 10 ms). A cell's outputs of
  // its first 10 ms wait at most that long; ipykernel itself buffers stdout for 200 ms.
  static constexpr std::chrono::microseconds kIopubHold{10000};
  std::vector<std::pair<Channel, protocol::Message>> held_;  // client messages sent while (re)starting
};

}  // namespace cellgate::launcher
