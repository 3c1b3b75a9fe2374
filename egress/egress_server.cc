// SPDX-License-Identifier: BSD-3-Clause
// egress_server: the proxy's control socket — kernels' policies in, jails' proxy sockets in, stats out.
#include "egress/egress_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "common/log.h"
#include "egress/secrets.h"

namespace cellgate::egress {
namespace {

namespace asio = boost::asio;
using asio::redirect_error;
using asio::use_awaitable;
using local = asio::local::stream_protocol;
using nlohmann::json;

constexpr size_t kMaxRequest = 256 * 1024;
constexpr auto kRequestDeadline = std::chrono::seconds(10);
constexpr auto kAttachDeadline = std::chrono::seconds(60);

json failure(const std::string& why) { return {{"ok", false}, {"error", why}}; }

bool valid_kernel_id(const json& j) {
  if (!j.is_string()) return false;
  const auto& s = j.get_ref<const std::string&>();
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

int int_option(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  return ::getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}

// A listening TCP socket, or not what the jail was supposed to send.
bool is_tcp_listener(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) return false;
  int domain = int_option(fd, SOL_SOCKET, SO_DOMAIN);
  return (domain == AF_INET || domain == AF_INET6) && int_option(fd, SOL_SOCKET, SO_TYPE) == SOCK_STREAM &&
         int_option(fd, SOL_SOCKET, SO_ACCEPTCONN) == 1;
}

// One message with up to two fds (SCM_RIGHTS); any other number of fds is refused (and closed).
bool receive_fds(int fd, common::UniqueFd& first, common::UniqueFd& second) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n != 1) return false;
  std::vector<common::UniqueFd> got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      got.emplace_back(received);
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0 || got.size() != 2) return false;
  first = std::move(got[0]);
  second = std::move(got[1]);
  return true;
}

}  // namespace

EgressServer::EgressServer(asio::io_context& io, ProxyServices& services, Config config)
    : io_(io), services_(services), config_(std::move(config)) {
  services_.refusals = &refusals_;
}

EgressServer::~EgressServer() { services_.refusals = nullptr; }

void EgressServer::serve(local::acceptor control) {
  control_ = std::make_unique<local::acceptor>(std::move(control));
  asio::co_spawn(io_, accept_loop(), asio::detached);
  if (config_.counters != nullptr) asio::co_spawn(io_, save_loop(), asio::detached);
}

asio::awaitable<void> EgressServer::save_loop() {
  asio::steady_timer tick(io_);
  for (;;) {
    tick.expires_after(std::chrono::seconds(1));
    boost::system::error_code ec;
    co_await tick.async_wait(redirect_error(use_awaitable, ec));
    if (ec) co_return;
    save_counters();
  }
}

void EgressServer::save_counters() {
  if (config_.counters == nullptr) return;
  // A full disk must not stop the proxy: the counters stay exact in memory, and the next save tries again.
  if (auto s = config_.counters->save(kernels_); !s) common::log_warn("msg=\"{}\"", s.error().message);
}

asio::awaitable<void> EgressServer::accept_loop() {
  for (;;) {
    boost::system::error_code ec;
    auto peer = co_await control_->async_accept(redirect_error(use_awaitable, ec));
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) continue;
    asio::co_spawn(io_, serve_peer(std::move(peer)), asio::detached);
  }
}

bool EgressServer::peer_allowed(int fd) const {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  if (cred.uid == 0 || cred.uid == ::getuid()) return true;
  return std::find(config_.control_uids.begin(), config_.control_uids.end(), cred.uid) != config_.control_uids.end();
}

asio::awaitable<void> EgressServer::serve_peer(local::socket peer) {
  if (!peer_allowed(peer.native_handle())) co_return;
  // Authenticated by SO_PEERCRED above, before a byte is parsed; still bounded and timed.
  asio::steady_timer deadline(io_, kRequestDeadline);
  deadline.async_wait([&peer](boost::system::error_code ec) {
    boost::system::error_code ignored;
    if (!ec) peer.close(ignored);
  });
  std::string line;
  boost::system::error_code ec;
  size_t n = co_await asio::async_read_until(peer, asio::dynamic_buffer(line, kMaxRequest), '\n', redirect_error(use_awaitable, ec));
  if (ec) co_return;
  line.resize(n);
  auto request = json::parse(line, nullptr, false);
  json answer = request.is_discarded() ? failure("the request is not JSON") : handle(request);
  std::string out = answer.dump() + "\n";
  co_await asio::async_write(peer, asio::buffer(out), redirect_error(use_awaitable, ec));
  if (!ec && answer.value("ok", false) && request.value("op", "") == "watch") {
    deadline.cancel();
    refusals_.add(std::move(peer));
    co_return;
  }
  if (ec || !answer.value("ok", false) || request.value("op", "") != "attach") co_return;
  // The jail's init sends its listening socket once it exists (after clone).
  deadline.expires_after(kAttachDeadline);
  deadline.async_wait([&peer](boost::system::error_code e) {
    boost::system::error_code ignored;
    if (!e) peer.close(ignored);
  });
  co_await peer.async_wait(local::socket::wait_read, redirect_error(use_awaitable, ec));
  deadline.cancel();
  common::UniqueFd listener, pidfd;
  if (ec || !receive_fds(peer.native_handle(), listener, pidfd) || !is_tcp_listener(listener.get())) {
    common::log_warn("kernel={} msg=\"attach without a listening socket\"", request["kernel"].get<std::string>());
    co_return;
  }
  attach(request["kernel"].get<std::string>(), std::move(listener), std::move(pidfd));
}

json EgressServer::handle(const json& request) {
  if (!request.is_object() || !request.contains("op") || !request["op"].is_string()) return failure("a request needs \"op\"");
  const std::string op = request["op"];
  if (op == "list") {
    json kernels = json::array();
    for (const auto& [id, k] : kernels_.all()) {
      json s = k->stats(0);
      s.erase("recent");
      kernels.push_back(std::move(s));
    }
    return {{"ok", true}, {"kernels", std::move(kernels)}, {"open", services_.open}};
  }
  if (op == "watch") return {{"ok", true}};  // the connection is handed to refusals_
  if (!valid_kernel_id(request.value("kernel", json()))) return failure("\"kernel\" must be an id of 1-64 letters, digits, '_' or '-'");
  const std::string id = request["kernel"];
  if (op == "set") {
    const json user = request.value("user", json(""));
    if (!user.is_string() || user.get_ref<const std::string&>().size() > 256) return failure("\"user\" must be a string");
    if (!request.contains("policy")) return failure("\"policy\" is missing");
    auto policy = parse_policy(request["policy"], ParseOptions{config_.ip_rules, "network"});
    if (!policy) return failure(policy.error().message);
    if (auto s = services_.secrets->check(*policy, "network"); !s) return failure(s.error().message);
    if (policy->needs_interception() && services_.intercept_context == nullptr)
      return failure("network.allow: header rules need the proxy's interception CA (cellgate-egress --ca-dir)");
    EffectiveLimits limits = effective_limits(policy->limits, config_.defaults);
    json canonical = policy_json(*policy);
    const bool created = kernels_.find(id) == nullptr;
    auto k = kernels_.set(id, user.get<std::string>(), std::move(*policy), limits);
    if (!k) return failure(k.error().message);
    // What this kernel spent under an earlier proxy still counts against its caps.
    if (created && config_.counters != nullptr) {
      if (auto saved = config_.counters->take(id)) (*k)->counters = *saved;
    }
    return {{"ok", true}, {"policy", std::move(canonical)}, {"limits", limits_json(limits)}};
  }
  // A kernel that ended while no proxy ran is removed from the saved counters, though unknown here.
  if (op == "remove" && config_.counters != nullptr) config_.counters->forget(id);
  auto kernel = kernels_.find(id);
  if (!kernel) return failure("unknown kernel " + id);
  if (op == "attach") return {{"ok", true}};
  if (op == "remove") {
    stop_listener(id);
    kernels_.remove(id);
    return {{"ok", true}};
  }
  if (op == "stats") {
    json recent = request.value("recent", json(50));
    size_t n = recent.is_number_unsigned() ? std::min<size_t>(recent.get<size_t>(), KernelState::kRecent) : 50;
    json out = kernel->stats(n);
    out["ok"] = true;
    return out;
  }
  return failure("unknown op '" + op + "' (set, attach, remove, stats, list, watch)");
}

void EgressServer::attach(const std::string& kernel, common::UniqueFd listener, common::UniqueFd init_pidfd) {
  auto k = kernels_.find(kernel);
  if (!k) return;  // removed meanwhile
  stop_listener(kernel);
  auto l = KernelListener::start(io_.get_executor(), k, std::move(listener), std::move(init_pidfd), services_,
                                 [this, kernel](KernelListener* ended) {
                                   auto it = listeners_.find(kernel);
                                   if (it != listeners_.end() && it->second.get() == ended) listeners_.erase(it);
                                 });
  if (!k->attached) return;  // the socket could not be taken (logged)
  listeners_[kernel] = l;
  common::log_info("kernel={} msg=\"proxy endpoint attached\"", kernel);
}

void EgressServer::stop_listener(const std::string& kernel) {
  auto it = listeners_.find(kernel);
  if (it == listeners_.end()) return;
  auto l = it->second;
  listeners_.erase(it);
  l->stop();
}

}  // namespace cellgate::egress
