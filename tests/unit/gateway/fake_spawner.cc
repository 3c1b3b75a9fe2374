// SPDX-License-Identifier: BSD-3-Clause
// fake_spawner: fake kernels over libzmq, each a thread plus a `sleep` standing for its process.
#include "tests/unit/gateway/fake_spawner.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "kernel-launcher/spawn_util.h"
#include "protocol/message.h"
#include "protocol/signer.h"
#include "protocol/zmq_codec.h"

namespace cellgate::testing {

using nlohmann::json;

// One kernel: binds the five sockets of its connection file and answers until stopped.
class FakeKernel {
 public:
  FakeKernel(json conn, pid_t pid) : conn_(std::move(conn)), pid_(pid), signer_(conn_.value("key", "")) {
    // Bound before spawn() returns, so the gateway's first connect finds the sockets; closed at once
    // at the end (linger 0), whatever the gateway did not read.
    for (zmq::socket_t* s : {&shell_, &iopub_, &stdin_, &control_, &hb_}) s->set(zmq::sockopt::linger, 0);
    shell_.bind(endpoint("shell_port"));
    iopub_.bind(endpoint("iopub_port"));
    stdin_.bind(endpoint("stdin_port"));
    control_.bind(endpoint("control_port"));
    hb_.bind(endpoint("hb_port"));
    thread_ = std::thread([this] { run(); });
  }
  ~FakeKernel() { stop(); }

  pid_t pid() const { return pid_; }
  bool running() const { return !stopped_; }
  // Ends the thread and the process standing for the kernel (the gateway sees it exit).
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (pid_ > 0) ::kill(-pid_, SIGKILL);
  }

 private:
  std::string endpoint(const char* port) const {
    const std::string ip = conn_.value("ip", "");
    const int p = conn_.value(port, 0);
    return conn_.value("transport", "ipc") == "ipc" ? "ipc://" + ip + "-" + std::to_string(p)
                                                    : "tcp://" + ip + ":" + std::to_string(p);
  }

  void run() {
    zmq::pollitem_t items[] = {{shell_.handle(), 0, ZMQ_POLLIN, 0},
                               {control_.handle(), 0, ZMQ_POLLIN, 0},
                               {hb_.handle(), 0, ZMQ_POLLIN, 0}};
    while (!stop_) {
      zmq::poll(items, 3, std::chrono::milliseconds(20));
      if (items[0].revents & ZMQ_POLLIN) serve(shell_, "shell");
      if (items[1].revents & ZMQ_POLLIN) serve(control_, "control");
      if (items[2].revents & ZMQ_POLLIN) {
        zmq::message_t ping;
        if (hb_.recv(ping, zmq::recv_flags::dontwait)) hb_.send(ping, zmq::send_flags::none);
      }
    }
    stopped_ = true;
  }

  void send(zmq::socket_t& socket, const protocol::Message& m) {
    auto frames = protocol::encode_zmq(m, signer_);
    for (size_t i = 0; i < frames.size(); ++i)
      socket.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }

  protocol::Message reply(const protocol::Message& request, const std::string& type, json content) {
    auto m = protocol::make_message(type, session_, content.dump(), request.header);
    m.identities = request.identities;
    return m;
  }

  void publish(const protocol::Message& parent, const std::string& type, json content) {
    auto m = protocol::make_message(type, session_, content.dump(), parent.header);
    m.identities = {"kernel." + type};
    send(iopub_, m);
  }

  void serve(zmq::socket_t& socket, const char* channel) {
    std::vector<zmq::message_t> parts;
    for (;;) {
      zmq::message_t part;
      if (!socket.recv(part, zmq::recv_flags::dontwait)) return;
      const bool more = part.more();
      parts.push_back(std::move(part));
      if (!more) break;
    }
    std::vector<std::string_view> frames;
    for (const auto& p : parts) frames.emplace_back(static_cast<const char*>(p.data()), p.size());
    auto request = protocol::decode_zmq(frames, signer_);
    if (!request) return;
    auto header = protocol::peek_header(request->header);
    if (!header) return;
    const std::string& type = header->msg_type;
    publish(*request, "status", {{"execution_state", "busy"}});
    if (type == "kernel_info_request") {
      send(socket, reply(*request, "kernel_info_reply",
                         {{"status", "ok"}, {"protocol_version", "5.3"}, {"implementation", "fake"},
                          {"language_info", {{"name", "python"}}}}));
    } else if (type == "execute_request") {
      auto content = json::parse(request->content, nullptr, false);
      const std::string code = content.is_object() ? content.value("code", "") : "";
      const bool silent = content.is_object() && content.value("silent", false);
      if (!silent) ++count_;
      if (code.find("raise") != std::string::npos) {
        publish(*request, "error", {{"ename", "ValueError"}, {"evalue", code}, {"traceback", json::array()}});
        send(socket, reply(*request, "execute_reply",
                           {{"status", "error"}, {"execution_count", count_}, {"ename", "ValueError"}, {"evalue", code},
                            {"traceback", json::array()}}));
      } else {
        if (!silent && !code.empty()) publish(*request, "stream", {{"name", "stdout"}, {"text", code}});
        send(socket, reply(*request, "execute_reply",
                           {{"status", "ok"}, {"execution_count", count_}, {"user_expressions", json::object()}}));
      }
    } else if (type == "shutdown_request") {
      send(socket, reply(*request, "shutdown_reply", {{"status", "ok"}, {"restart", false}}));
      stop_ = true;
    } else if (type == "interrupt_request") {
      send(socket, reply(*request, "interrupt_reply", {{"status", "ok"}}));
    }
    publish(*request, "status", {{"execution_state", "idle"}});
    if (std::string_view(channel) == "control" && stop_ && pid_ > 0) ::kill(-pid_, SIGKILL);
  }

  json conn_;
  pid_t pid_;
  protocol::Signer signer_;
  std::string session_ = "fake-kernel-session";
  int count_ = 0;
  zmq::context_t ctx_{1};
  zmq::socket_t shell_{ctx_, zmq::socket_type::router};
  zmq::socket_t iopub_{ctx_, zmq::socket_type::pub};
  zmq::socket_t stdin_{ctx_, zmq::socket_type::router};
  zmq::socket_t control_{ctx_, zmq::socket_type::router};
  zmq::socket_t hb_{ctx_, zmq::socket_type::rep};
  std::atomic<bool> stop_{false};
  std::atomic<bool> stopped_{false};
  std::thread thread_;
};

FakeSpawner::FakeSpawner() = default;

FakeSpawner::~FakeSpawner() {
  std::lock_guard lock(mu_);
  kernels_.clear();
}

boost::asio::awaitable<common::Result<launcher::ProcessHandle>> FakeSpawner::spawn(const launcher::SpawnRequest& request) {
  // Started at once, answered after the delay: as a fork server forks first and answers then.
  auto proc = spawn_now(request);
  if (long ms = delay_ms_; ms > 0) {
    most_waiting_ = std::max(most_waiting_.load(), ++waiting_);
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, std::chrono::milliseconds(ms));
    boost::system::error_code ec;
    co_await t.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    --waiting_;
  }
  co_return proc;
}

common::Result<launcher::ProcessHandle> FakeSpawner::spawn_now(const launcher::SpawnRequest& request) {
  {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
  }
  ++spawns_;
  if (fail_next_.exchange(false)) return common::make_error(common::Errc::kInternal, "fake spawn failure");
  std::ifstream in(request.argv.back());
  std::stringstream text;
  text << in.rdbuf();
  auto conn = json::parse(text.str(), nullptr, false);
  if (!conn.is_object()) return common::make_error(common::Errc::kInternal, "fake kernel: no connection file");
  // The process standing for the kernel names it in its command line, as a real one does (re-adoption
  // checks /proc/PID/cmdline), and leads its own session (spawn_process): kill(-pid) ends it.
  auto proc = launcher::spawn_process({"/bin/sh", "-c", "sleep 100000; :", request.kernel_id}, {{"PATH", "/bin:/usr/bin"}},
                                      "/", request.private_dir + "/kernel.log", -1);
  if (!proc) return proc.error();
  std::lock_guard lock(mu_);
  kernels_[request.kernel_id] = std::make_unique<FakeKernel>(std::move(conn), proc->pid);
  return proc;
}

void FakeSpawner::signal(const launcher::ProcessHandle& process, launcher::KernelSignal sig) {
  if (sig == launcher::KernelSignal::kInterrupt || process.pid <= 0) return;
  std::lock_guard lock(mu_);
  for (auto it = kernels_.begin(); it != kernels_.end(); ++it) {
    if (it->second->pid() == process.pid) {
      it->second->stop();
      return;
    }
  }
  ::kill(-process.pid, SIGKILL);
}

common::Status FakeSpawner::freeze(const launcher::ProcessHandle&, bool frozen, launcher::Freezer) {
  ++(frozen ? frozen_ : thawed_);
  return common::ok();
}

common::Status FakeSpawner::set_limits(const launcher::ProcessHandle&, const launcher::Limits&) { return common::ok(); }

std::vector<launcher::SpawnRequest> FakeSpawner::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void FakeSpawner::kill_kernel(const std::string& kernel_id) {
  std::lock_guard lock(mu_);
  auto it = kernels_.find(kernel_id);
  if (it != kernels_.end()) it->second->stop();
}

size_t FakeSpawner::running() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, k] : kernels_) n += k->running() ? 1 : 0;
  return n;
}

void write_fake_kernelspec(const std::string& dir, const std::string& name) {
  std::filesystem::create_directories(dir + "/" + name);
  std::ofstream(dir + "/" + name + "/kernel.json")
      << json{{"argv", {"fake-kernel", "{connection_file}"}}, {"display_name", "Fake " + name}, {"language", "python"}}
             .dump();
}

}  // namespace cellgate::testing
