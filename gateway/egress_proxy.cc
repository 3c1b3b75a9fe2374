// SPDX-License-Identifier: BSD-3-Clause
// egress_proxy: the gateway's cellgate-egress.
#include "gateway/egress_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include "common/log.h"
#include "kernel-launcher/spawn_util.h"

namespace cellgate::gateway {

using common::Errc;
using common::make_error;

namespace {

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// Reads one line from fd until deadline (poll(2)); "" on EOF or timeout.
std::string read_line(int fd, std::chrono::steady_clock::time_point deadline) {
  std::string line;
  while (line.size() < 4096) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return "";
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n <= 0) return "";
    if (c == '\n') return line;
    line.push_back(c);
  }
  return line;
}

// Copies from to to (0644), through a temporary file renamed over it.
common::Status publish_bundle(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return make_error(Errc::kInternal, "cannot read " + from);
  const std::string tmp = to + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
    if (!out.flush()) return make_error(Errc::kInternal, "cannot write " + tmp);
  }
  if (::chmod(tmp.c_str(), 0644) != 0 || ::rename(tmp.c_str(), to.c_str()) != 0)
    return make_error(Errc::kInternal, "cannot publish " + to, errno);
  return common::ok();
}

// A jail binds the bundle by path from inside its user namespace, as a uid that is nobody on the
// host: every directory above it must be searchable by others. Why not, or "".
std::string unreachable_by_jails(const std::string& path) {
  for (auto dir = std::filesystem::path(path).parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH))
      return "the jails cannot reach " + path + ": " + dir.string() +
             " is not searchable by others (chmod o+x, or another --runtime-dir)";
  }
  return "";
}

// A control request's socket, and whether its deadline closed it.
struct Exchange {
  explicit Exchange(boost::asio::io_context& io) : socket(io) {}
  boost::asio::local::stream_protocol::socket socket;
  bool expired = false;
};

constexpr std::chrono::seconds kAskTimeout{5};
constexpr size_t kMaxAnswer = 64u << 20;  // one line; the largest (stats with 256 audit lines) is far less

}  // namespace

EgressProxy::EgressProxy(boost::asio::io_context& io, EgressProxyOptions options, std::chrono::milliseconds restart_delay)
    : io_(io), options_(std::move(options)), control_(options_.runtime_dir + "/egress.sock"),
      log_(options_.runtime_dir + "/egress.log"), ca_bundle_(options_.runtime_dir + "/egress-ca.pem"),
      restart_delay_(restart_delay), restart_(io) {}

EgressProxy::~EgressProxy() { stop(); }

common::Status EgressProxy::start() {
  if (stopped_) return make_error(Errc::kUnavailable, "the egress proxy is stopped");
  std::vector<std::string> argv = {options_.binary, "--control", control_, "--ca-dir", options_.data_dir + "/egress-ca",
                                   "--audit-log", options_.data_dir + "/egress-audit.jsonl",
                                   "--state-dir", options_.data_dir + "/egress-state",
                                   "--parent-pid", std::to_string(::getpid())};
  argv.insert(argv.end(), options_.extra.begin(), options_.extra.end());
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return make_error(Errc::kInternal, "pipe", errno);
  common::UniqueFd ready(pipe_fds[0]), ready_w(pipe_fds[1]);
  common::UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  common::UniqueFd log(::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!null || !log) return make_error(Errc::kInternal, "open " + log_, errno);
  // stdin /dev/null, stdout the ready pipe, stderr its log; its own session.
  auto pid = launcher::spawn_in_session(argv, {{"PATH", "/usr/sbin:/usr/bin:/sbin:/bin"}}, "/",
                                        {null.get(), ready_w.get(), log.get()});
  if (!pid) return make_error(Errc::kUnavailable, "cannot start " + options_.binary + ": " + pid.error().message);
  ready_w.reset();
  process_ = launcher::ProcessHandle{};
  process_.pid = pid.value();
  process_.pidfd = launcher::open_pidfd(pid.value());
  const std::string line = read_line(ready.get(), std::chrono::steady_clock::now() + std::chrono::seconds(30));
  if (line.rfind("cellgate-egress: ready", 0) != 0) {
    stop_process();
    const std::string why = last_line(log_);
    return make_error(Errc::kUnavailable, "the egress proxy did not start" + (why.empty() ? "" : ": " + why));
  }
  // The bundle (public certificates only) where a jail's mount can reach it: the data dir is 0700,
  // closed to the jail's user namespace (jail-on-this-machine.md), the runtime dir is not.
  if (auto st = publish_bundle(options_.data_dir + "/egress-ca/bundle.pem", ca_bundle_); !st) {
    stop_process();
    return make_error(Errc::kUnavailable, "the egress proxy's CA bundle: " + st.error().message);
  }
  unreachable_ = unreachable_by_jails(ca_bundle_);
  if (!unreachable_.empty()) common::log_warn("msg=\"networked kernels cannot start\" why=\"{}\"", unreachable_);
  common::log_info("msg=\"egress proxy ready\" pid={} control={}", process_.pid, control_);
  watch();
  follow_refusals();
  return common::ok();
}

// The socket, and whether the proxy object still wants its lines: the reading coroutine holds this,
// never the EgressProxy, so that it can finish after the proxy is gone.
struct EgressProxy::RefusalStream {
  explicit RefusalStream(boost::asio::io_context& io) : socket(io) {}
  boost::asio::local::stream_protocol::socket socket;
  bool stopped = false;
};

void EgressProxy::stop_following() {
  if (!refusals_) return;
  refusals_->stopped = true;
  boost::system::error_code ignored;
  refusals_->socket.close(ignored);
  refusals_.reset();
}

void EgressProxy::follow_refusals() {
  namespace asio = boost::asio;
  stop_following();
  if (!on_refusal_) return;
  auto stream = std::make_shared<RefusalStream>(io_);
  refusals_ = stream;
  asio::co_spawn(
      io_,
      [stream, control = control_, deliver = on_refusal_]() -> asio::awaitable<void> {
        using asio::redirect_error;
        using asio::use_awaitable;
        boost::system::error_code ec;
        asio::local::stream_protocol::endpoint at;
        try {
          at = asio::local::stream_protocol::endpoint(control);
        } catch (const boost::system::system_error& e) {
          ec = e.code();  // a path too long for sun_path (the proxy could not have bound it either)
        }
        if (!ec) co_await stream->socket.async_connect(at, redirect_error(use_awaitable, ec));
        static constexpr std::string_view kWatch = "{\"op\":\"watch\"}\n";
        if (!ec) co_await asio::async_write(stream->socket, asio::buffer(kWatch), redirect_error(use_awaitable, ec));
        if (ec) {
          if (!stream->stopped) common::log_warn("msg=\"egress proxy: cannot watch refusals\" error=\"{}\"", ec.message());
          co_return;
        }
        std::string buffer;
        for (bool answered = false;;) {
          // A line is one audit record: well under 64 KiB (hosts and reasons are bounded).
          const size_t n = co_await asio::async_read_until(stream->socket, asio::dynamic_buffer(buffer, 64u << 10), '\n',
                                                           redirect_error(use_awaitable, ec));
          if (ec || stream->stopped) co_return;  // the proxy exited (a restart follows anew) or we stop
          auto line = nlohmann::json::parse(std::string_view(buffer).substr(0, n), nullptr, false);
          buffer.erase(0, n);
          if (!line.is_object()) continue;
          if (!answered) {
            answered = true;
            if (!line.value("ok", false)) co_return;
            continue;
          }
          deliver(line);
        }
      },
      asio::detached);
}

void EgressProxy::watch() {
  watch_ = std::make_unique<launcher::ExitWatch>(io_.get_executor(), process_.pidfd.get());
  watch_->async_wait([this] {
    if (process_.pid <= 0) return;  // we are stopping it
    int status = launcher::reap(process_);
    common::log_error("msg=\"egress proxy exited; restarting it\" pid={} status=\"{}\"", process_.pid,
                      launcher::describe_wait_status(status));
    process_.pid = -1;
    restart_.expires_after(restart_delay_);
    restart_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      if (auto st = start(); !st) {
        common::log_error("msg=\"egress proxy restart failed\" error=\"{}\"", st.error().message);
        process_.pid = -1;
        restart_.expires_after(restart_delay_ * 5);
        restart_.async_wait([this](const boost::system::error_code& again) {
          if (!again && !stopped_ && start() && on_restart_) on_restart_();
        });
        return;
      }
      if (on_restart_) on_restart_();
    });
  });
}

void EgressProxy::stop_process() {
  if (process_.pid <= 0) return;
  ::kill(process_.pid, SIGTERM);
  bool reaped = false;
  for (int i = 0; i < 100 && !(reaped = launcher::reap(process_) >= 0); ++i) ::usleep(10000);
  if (!reaped) {  // still our unreaped child, so the pid is still its own
    ::kill(process_.pid, SIGKILL);
    ::waitpid(process_.pid, nullptr, 0);
  }
  process_.pid = -1;
}

void EgressProxy::stop() {
  stopped_ = true;
  restart_.cancel();
  stop_following();
  if (watch_) watch_->cancel();
  stop_process();
}

boost::asio::awaitable<common::Result<nlohmann::json>> EgressProxy::ask(nlohmann::json request) const {
  namespace asio = boost::asio;
  using asio::redirect_error;
  using asio::use_awaitable;
  // Nothing of *this after the first suspension: a copy of what the exchange needs.
  const std::string control = control_;
  auto x = std::make_shared<Exchange>(io_);
  auto& socket = x->socket;
  // One deadline for the whole exchange: it closes the socket, which ends whichever step is waiting.
  // Its handler shares the exchange: it may run after this frame is gone.
  asio::steady_timer deadline(io_);
  deadline.expires_after(kAskTimeout);
  deadline.async_wait([x](const boost::system::error_code& ec) {
    if (ec) return;  // the exchange ended first: the timer went with its frame
    x->expired = true;
    boost::system::error_code ignored;
    x->socket.close(ignored);
  });
  boost::system::error_code ec;
  asio::local::stream_protocol::endpoint at;
  try {
    at = asio::local::stream_protocol::endpoint(control);
  } catch (const boost::system::system_error& e) {
    co_return make_error(Errc::kUnavailable, "egress proxy: " + control + ": " + e.code().message());
  }
  auto late = [] {
    return make_error(Errc::kUnavailable, fmt::format("the egress proxy gave no answer within {} s", kAskTimeout.count()));
  };
  co_await socket.async_connect(at, redirect_error(use_awaitable, ec));
  if (ec) co_return x->expired ? late() : make_error(Errc::kUnavailable, "the egress proxy is not running (" + ec.message() + ")");
  const std::string line = request.dump() + "\n";
  co_await asio::async_write(socket, asio::buffer(line), redirect_error(use_awaitable, ec));
  if (ec) co_return x->expired ? late() : make_error(Errc::kUnavailable, "egress proxy: send: " + ec.message());
  std::string answer;
  co_await asio::async_read_until(socket, asio::dynamic_buffer(answer, kMaxAnswer), '\n', redirect_error(use_awaitable, ec));
  if (ec && x->expired) co_return late();
  auto doc = nlohmann::json::parse(answer, nullptr, false);
  if (!doc.is_object()) co_return make_error(Errc::kUnavailable, "the egress proxy gave no answer");
  if (!doc.value("ok", false)) co_return make_error(Errc::kBadRequest, doc.value("error", std::string("refused")));
  co_return doc;
}

}  // namespace cellgate::gateway
