// SPDX-License-Identifier: BSD-3-Clause
// postgres_link: one libpq connection with deadlines, replaced by a background reconnect when lost.
#include "state/postgres_link.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/core.h>

#include "common/log.h"

namespace cellgate::state {

using common::Errc;
using common::Error;
using common::make_error;
using common::Result;
using Clock = std::chrono::steady_clock;

namespace {

// A connect attempt, the pause between attempts (doubling), and how much longer than the server's own
// statement_timeout the client waits before it gives the connection up as unresponsive.
constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::seconds(2);
constexpr auto kUnresponsiveMargin = std::chrono::seconds(2);
// A second node on one database waits this long for the first one's lock (a gateway restarted after
// kill -9: the server needs a moment to end the dead session) before it is refused.
constexpr auto kSingleNodeWait = std::chrono::seconds(5);

// libpq's messages end in newlines and may span lines ("…failed: Connection refused\n\tIs the
// server running…"): one line, trimmed.
std::string flatten(const char* text) {
  std::string out;
  bool space = false;
  for (const char* p = text ? text : ""; *p; ++p) {
    const bool ws = *p == '\n' || *p == '\t' || *p == '\r' || *p == ' ';
    if (ws) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *p;
  }
  return out.empty() ? "unknown error" : out;
}

Errc errc_for_sqlstate(std::string_view code) {
  if (code.starts_with("23")) return Errc::kConflict;
  if (code == "40001" || code == "40P01" || code == "55P03" || code.starts_with("08") || code.starts_with("53") ||
      code.starts_with("57P"))
    return Errc::kUnavailable;
  if (code == "57014") return Errc::kTimeout;
  if (code == "22021" || code == "22P05") return Errc::kBadRequest;
  return Errc::kInternal;
}

// 1: ready, 0: the deadline passed, -1: poll failed. Waits at most until `until` (or until_slice).
int wait_socket(PGconn* conn, short events, Clock::time_point until) {
  const int fd = PQsocket(conn);
  if (fd < 0) return -1;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return 0;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return -1;
  }
}

// Sends and awaits one query on conn. On failure, *lost says whether the connection is unusable now.
Result<PgResult> run_on(PGconn* conn, const std::string& sql, const PgParams* params, Clock::time_point deadline,
                        bool* lost) {
  *lost = false;
  int sent = 0;
  if (params) {
    std::vector<const char*> values;
    values.reserve(params->size());
    for (const auto& p : *params) values.push_back(p ? p->c_str() : nullptr);
    sent = PQsendQueryParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                             nullptr, 0);
  } else {
    sent = PQsendQuery(conn, sql.c_str());
  }
  auto gone = [&](std::string why) {
    *lost = true;
    return make_error(Errc::kUnavailable, std::move(why));
  };
  if (!sent) {
    if (PQstatus(conn) == CONNECTION_BAD) return gone(flatten(PQerrorMessage(conn)));
    return make_error(Errc::kInternal, flatten(PQerrorMessage(conn)));
  }
  for (;;) {  // the query may not fit the socket buffer at once (PQflush, libpq-async.html)
    int f = PQflush(conn);
    if (f == 0) break;
    if (f < 0) return gone(flatten(PQerrorMessage(conn)));
    int w = wait_socket(conn, POLLOUT | POLLIN, deadline);
    if (w <= 0) return gone(w == 0 ? "no answer from the server in time" : "poll failed");
    if (!PQconsumeInput(conn)) return gone(flatten(PQerrorMessage(conn)));
  }
  PgResult last, failed;
  for (;;) {
    while (PQisBusy(conn)) {
      int w = wait_socket(conn, POLLIN, deadline);
      if (w <= 0) return gone(w == 0 ? "no answer from the server in time" : "poll failed");
      if (!PQconsumeInput(conn)) return gone(flatten(PQerrorMessage(conn)));
    }
    PgResult r(PQgetResult(conn));
    if (!r) break;
    const auto status = PQresultStatus(r.get());
    if (status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR || status == PGRES_BAD_RESPONSE) {
      if (!failed) failed = std::move(r);
    } else {
      last = std::move(r);
    }
  }
  if (PQstatus(conn) == CONNECTION_BAD)
    return gone(failed ? flatten(PQresultErrorMessage(failed.get())) : flatten(PQerrorMessage(conn)));
  if (failed) {
    const std::string_view state = PQresultErrorField(failed.get(), PG_DIAG_SQLSTATE)
                                       ? PQresultErrorField(failed.get(), PG_DIAG_SQLSTATE)
                                       : "";
    const char* primary = PQresultErrorField(failed.get(), PG_DIAG_MESSAGE_PRIMARY);
    std::string message = primary ? flatten(primary) : flatten(PQresultErrorMessage(failed.get()));
    // The server is ending this session (shutdown, restart, terminated by an admin) or lost it: the
    // connection is done even if libpq has not read the end of the stream yet.
    if (state.starts_with("57P") || state.starts_with("08")) return gone(std::move(message));
    return make_error(errc_for_sqlstate(state), std::move(message));
  }
  if (!last) return make_error(Errc::kInternal, "the server returned no result");
  return last;
}

// One connection attempt, bounded by kConnectTimeout, giving up early when stop() says so. Then the
// checks every connection must pass before it is used.
template <typename Stop>
Result<PGconn*> connect_once(const std::string& url, const DatabaseOptions& options, Stop stop) {
  // Ours first, the URL last: libpq keeps the last value of a repeated keyword (expand_dbname), so the
  // URL's own settings win. keepalives and tcp_user_timeout notice a silent peer; lock_timeout and
  // statement_timeout make the server end a stuck statement itself, with an error we can report.
  const std::string server_options =
      fmt::format("-c lock_timeout=5000 -c statement_timeout={}", options.statement_timeout.count());
  const char* keys[] = {"application_name", "client_encoding", "keepalives", "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout", "options", "dbname", nullptr};
  const char* values[] = {"cellgate", "UTF8", "1", "10", "5", "3", "15000", server_options.c_str(), url.c_str(),
                          nullptr};
  PGconn* conn = PQconnectStartParams(keys, values, 1);
  if (!conn) return make_error(Errc::kInternal, "out of memory");
  auto fail = [&](Errc code, std::string why) {
    PQfinish(conn);
    return make_error(code, std::move(why));
  };
  const auto deadline = Clock::now() + kConnectTimeout;
  PostgresPollingStatusType poll_status = PGRES_POLLING_WRITING;
  while (PQstatus(conn) != CONNECTION_BAD && poll_status != PGRES_POLLING_OK && poll_status != PGRES_POLLING_FAILED) {
    if (stop()) return fail(Errc::kUnavailable, "stopped");
    if (Clock::now() >= deadline) return fail(Errc::kUnavailable, "timed out connecting");
    const short events = poll_status == PGRES_POLLING_READING ? POLLIN : POLLOUT;
    int w = wait_socket(conn, events, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
    if (w < 0) return fail(Errc::kUnavailable, flatten(PQerrorMessage(conn)));
    if (w > 0) poll_status = PQconnectPoll(conn);
  }
  if (PQstatus(conn) != CONNECTION_OK) return fail(Errc::kUnavailable, flatten(PQerrorMessage(conn)));
  // Server notices ("relation … already exists, skipping") would go to our stderr unasked.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  const char* encoding = PQparameterStatus(conn, "server_encoding");
  if (!encoding || std::strcmp(encoding, "UTF8") != 0)
    return fail(Errc::kBadRequest, fmt::format("the database's encoding is {}; cellgate needs UTF8 (CREATE DATABASE "
                                               "… ENCODING 'UTF8')",
                                               encoding ? encoding : "unknown"));
  if (options.single_node) {
    bool lost = false;
    const auto lock_deadline = Clock::now() + kSingleNodeWait;
    for (;;) {
      auto r = run_on(conn, "SELECT pg_try_advisory_lock(hashtextextended('cellgate.single-node', 0))", nullptr,
                      Clock::now() + kConnectTimeout, &lost);
      if (!r) return fail(r.error().code, r.error().message);
      if (std::strcmp(PQgetvalue(r.value().get(), 0, 0), "t") == 0) break;
      if (Clock::now() >= lock_deadline || stop())
        return fail(Errc::kConflict,
                    "another cellgate node serves this database (one node per database until cluster membership "
                    "lands; docs/cluster.md)");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  return conn;
}

}  // namespace

void PgResultFree::operator()(pg_result* r) const { PQclear(r); }

std::string redact_url(std::string_view url) {
  std::string out(url);
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = std::min(out.find_first_of("/?", start), out.size());
    const size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  for (size_t pos = out.find("password="); pos != std::string::npos; pos = out.find("password=", pos + 1)) {
    const size_t value = pos + 9;
    const size_t end = std::min(out.find_first_of("& ", value), out.size());
    out.replace(value, end - value, "***");
  }
  return out;
}

PostgresLink::PostgresLink(std::string url, const DatabaseOptions& options)
    : url_(std::move(url)), name_(redact_url(url_)), options_(options) {}

Result<std::unique_ptr<PostgresLink>> PostgresLink::open(const std::string& url, const DatabaseOptions& options) {
  std::unique_ptr<PostgresLink> link(new PostgresLink(url, options));
  const auto deadline = Clock::now() + options.connect_wait;
  auto backoff = std::chrono::milliseconds(kFirstBackoff);
  for (bool told = false;; told = true) {
    auto conn = connect_once(url, options, [] { return false; });
    if (conn) {
      link->conn_ = conn.value();
      return link;
    }
    // Only an unreachable server is worth waiting for; a wrong password or database is not.
    const auto now = Clock::now();
    if (conn.error().code != Errc::kUnavailable || now >= deadline)
      return make_error(conn.error().code, fmt::format("{}: {}", link->name_, conn.error().message));
    if (!told)
      common::log_warn("msg=\"waiting for the state database\" database={} error=\"{}\"", link->name_,
                       conn.error().message);
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
}

PostgresLink::~PostgresLink() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (reconnector_.joinable()) reconnector_.join();
  if (conn_) PQfinish(conn_);
  if (fresh_) PQfinish(fresh_);
}

Result<PGconn*> PostgresLink::acquire() {
  if (conn_ && PQstatus(conn_) == CONNECTION_OK) return conn_;
  if (conn_) return lose(flatten(PQerrorMessage(conn_)));
  std::lock_guard lock(mutex_);
  if (fresh_) {
    conn_ = std::exchange(fresh_, nullptr);
    ++generation_;
    return conn_;
  }
  return make_error(Errc::kUnavailable,
                    fmt::format("state database unavailable ({}; reconnecting): {}", name_, last_error_));
}

Error PostgresLink::lose(std::string why) {
  if (conn_) PQfinish(conn_);  // the server rolls back whatever this session had open
  conn_ = nullptr;
  common::log_warn("msg=\"state database connection lost; reconnecting\" database={} error=\"{}\"", name_, why);
  std::lock_guard lock(mutex_);
  last_error_ = why;
  if (!reconnecting_ && !stopping_) {
    if (reconnector_.joinable()) reconnector_.join();  // it has finished: reconnecting_ is false
    reconnecting_ = true;
    reconnector_ = std::thread([this] { reconnect_loop(); });
  }
  return make_error(Errc::kUnavailable, fmt::format("state database unavailable ({}): {}", name_, why));
}

void PostgresLink::reconnect_loop() {
  auto backoff = std::chrono::milliseconds(kFirstBackoff);
  auto stopping = [this] {
    std::lock_guard lock(mutex_);
    return stopping_;
  };
  for (;;) {
    auto conn = connect_once(url_, options_, stopping);
    std::unique_lock lock(mutex_);
    if (conn) {
      if (stopping_) {
        PQfinish(conn.value());
      } else {
        fresh_ = conn.value();
        common::log_info("msg=\"state database reconnected\" database={}", name_);
      }
      reconnecting_ = false;
      return;
    }
    last_error_ = conn.error().message;
    if (wake_.wait_for(lock, backoff, [this] { return stopping_; })) {
      reconnecting_ = false;
      return;
    }
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
}

Result<PgResult> PostgresLink::query(const std::string& sql, const PgParams* params,
                                     std::optional<uint64_t> require_generation) {
  auto conn = acquire();
  if (!conn) return conn.error();
  if (require_generation && *require_generation != generation_)
    return make_error(Errc::kUnavailable, "state database unavailable: the connection was lost during the transaction");
  bool lost = false;
  const auto deadline = Clock::now() + options_.statement_timeout + kUnresponsiveMargin;
  auto r = run_on(conn.value(), sql, params, deadline, &lost);
  if (!r && lost) return lose(r.error().message);
  if (!r) return make_error(r.error().code, fmt::format("{}: {}", name_, r.error().message));
  return r;
}

}  // namespace cellgate::state
