// SPDX-License-Identifier: BSD-3-Clause
// egress_main: cellgate-egress — load everything, bind the control socket, drop privileges, serve.
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <tuple>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>

#include "common/log.h"
#include "egress/cert_authority.h"
#include "egress/egress_options.h"
#include "egress/egress_server.h"
#include "egress/tls_contexts.h"

namespace {

namespace asio = boost::asio;
using namespace cellgate::egress;

struct ConfigError {
  std::string message;
};

template <class T>
T need(cellgate::common::Result<T> r) {
  if (!r) throw ConfigError{r.error().message};
  return std::move(r.value());
}

// "199999", "199999:199999" or a user name.
std::pair<uid_t, gid_t> resolve_user(const std::string& spec) {
  if (!spec.empty() && spec[0] >= '0' && spec[0] <= '9') {
    size_t colon = spec.find(':');
    unsigned long uid = std::stoul(spec.substr(0, colon));
    unsigned long gid = colon == std::string::npos ? uid : std::stoul(spec.substr(colon + 1));
    if (uid == 0 || uid > 0xfffffffeUL || gid > 0xfffffffeUL) throw ConfigError{"--user: not a uid[:gid] other than root: " + spec};
    return {static_cast<uid_t>(uid), static_cast<gid_t>(gid)};
  }
  passwd* pw = ::getpwnam(spec.c_str());
  if (pw == nullptr || pw->pw_uid == 0) throw ConfigError{"--user: no such user (or it is root): " + spec};
  return {pw->pw_uid, pw->pw_gid};
}

// The proxy parses hostile bytes (kernels' HTTP and TLS): after setup it keeps no privilege. The
// CA key, the secrets and the control socket are already open; nothing else needs root.
void drop_privileges(const std::string& user, uint64_t max_open) {
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  // Per connection: the client, the upstream and, while relaying, two pipes (splice) of two fds each.
  rlim_t want = static_cast<rlim_t>(max_open * 6 + 1024);
  if (nofile.rlim_cur < want) {
    nofile.rlim_cur = std::min(want, nofile.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (::geteuid() == 0) {
    auto [uid, gid] = resolve_user(user);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0)
      throw ConfigError{"cannot switch to --user " + user + ": " + std::strerror(errno)};
  }
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // no ptrace or /proc/PID/mem by anyone of the same uid
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

asio::local::stream_protocol::acceptor bind_control(asio::io_context& io, const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw ConfigError{"--control: " + path + " exists and is not a socket"};
    ::unlink(path.c_str());
  }
  asio::local::stream_protocol::acceptor acceptor(io);
  boost::system::error_code ec;
  acceptor.open(asio::local::stream_protocol(), ec);
  mode_t old = ::umask(077);  // 0600 from the start: no window where others may connect
  if (!ec) acceptor.bind(asio::local::stream_protocol::endpoint(path), ec);
  ::umask(old);
  if (!ec) acceptor.listen(128, ec);
  if (ec) throw ConfigError{"--control: cannot listen on " + path + ": " + ec.message()};
  return acceptor;
}

int run(const EgressOptions& o) {
  cellgate::common::LogLevel level;
  if (!cellgate::common::parse_log_level(o.log_level, level)) throw ConfigError{"--log-level: debug, info, warn or error"};
  cellgate::common::set_log_level(level);
  ::signal(SIGPIPE, SIG_IGN);

  asio::io_context io(1);
  Resolver::Options ro;
  if (!o.hosts_file.empty()) ro.hosts = need(load_hosts_file(o.hosts_file));
  ro.system = o.dns;
  Resolver resolver(io.get_executor(), std::move(ro));
  HostAddresses host_addresses;
  Secrets secrets;
  if (!o.secrets_file.empty()) secrets = need(Secrets::load(o.secrets_file));
  SslCtxPtr peek = make_peek_context();
  if (!peek) throw ConfigError{"cannot create the TLS contexts: " + openssl_error("")};
  asio::ssl::context upstream(need(make_upstream_context(o.upstream_ca)).release());
  std::unique_ptr<CertAuthority> ca;
  std::unique_ptr<asio::ssl::context> intercept;
  if (!o.ca_dir.empty()) {
    ca = need(CertAuthority::open(o.ca_dir, o.system_bundle));
    intercept = std::make_unique<asio::ssl::context>(need(make_intercept_context(*ca)).release());
  }
  AuditLog audit;
  if (!o.audit_log.empty()) audit = need(AuditLog::open(o.audit_log, o.audit_max_bytes));
  CounterStore counters;
  if (!o.state_dir.empty()) {
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    if (::geteuid() == 0) std::tie(uid, gid) = resolve_user(o.user);
    counters = need(CounterStore::open(o.state_dir, uid, gid, KernelTable::kDefaultMaxKernels));
  }

  ProxyServices services;
  services.resolver = &resolver;
  services.host_addresses = &host_addresses;
  services.denied = o.denied;
  services.peek_context = peek.get();
  services.intercept_context = intercept.get();
  services.upstream_context = &upstream;
  services.secrets = &secrets;
  services.audit = &audit;
  services.max_open = o.max_open;

  auto control = bind_control(io, o.control);
  // The gateway that started it: a pidfd is readable once that process exits (pidfd_open(2)). Opened
  // before the uid changes; a proxy left behind by a crashed gateway would serve the jails' endpoints
  // beside the next one's.
  asio::posix::stream_descriptor parent(io);
  if (o.parent_pid > 0) {
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, o.parent_pid, 0));
    if (fd < 0) throw ConfigError{"--parent-pid " + std::to_string(o.parent_pid) + ": " + std::strerror(errno)};
    parent.assign(fd);
    parent.async_wait(asio::posix::stream_descriptor::wait_read, [&io](boost::system::error_code ec) {
      if (!ec) io.stop();
    });
  }
  drop_privileges(o.user, o.max_open);
  EgressServer server(io, services,
                      EgressServer::Config{o.ip_rules, o.limits, o.control_uids, counters.enabled() ? &counters : nullptr});
  server.serve(std::move(control));
  asio::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&io](boost::system::error_code, int) { io.stop(); });
  std::cout << "cellgate-egress: ready control=" << o.control << (ca ? " ca_bundle=" + ca->bundle_path() : "")
            << " uid=" << ::getuid() << std::endl;
  io.run();
  server.save_counters();
  ::unlink(o.control.c_str());
  return 0;
}

// `cellgate-egress ask SOCKET JSON`: one control request, its answer on stdout.
int ask(const std::string& socket_path, const std::string& request) {
  asio::io_context io;
  asio::local::stream_protocol::socket s(io);
  boost::system::error_code ec;
  s.connect(asio::local::stream_protocol::endpoint(socket_path), ec);
  if (ec) {
    std::fprintf(stderr, "cellgate-egress: ask: %s: %s\n", socket_path.c_str(), ec.message().c_str());
    return 2;
  }
  std::string line = request;
  line.erase(std::remove(line.begin(), line.end(), '\n'), line.end());  // one request is one line
  asio::write(s, asio::buffer(line + "\n"), ec);
  std::string answer;
  if (!ec) asio::read_until(s, asio::dynamic_buffer(answer, 1 << 20), '\n', ec);
  if (answer.empty()) {
    std::fprintf(stderr, "cellgate-egress: ask: no answer (%s)\n", ec.message().c_str());
    return 2;
  }
  std::fputs(answer.c_str(), stdout);
  auto j = nlohmann::json::parse(answer, nullptr, false);
  return j.is_object() && j.value("ok", false) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "ask") return ask(argv[2], argv[3]);
  auto options = parse_egress_options(argc, argv);
  if (!options) {
    std::fprintf(stderr, "cellgate-egress: %s\n", options.error().message.c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(egress_help_text().c_str(), stdout);
    return 0;
  }
  try {
    return run(*options);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "cellgate-egress: %s\n", e.message.c_str());
    return 2;
  }
}
