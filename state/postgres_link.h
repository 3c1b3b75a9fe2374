// SPDX-License-Identifier: BSD-3-Clause
// postgres_link: one libpq connection with deadlines, replaced by a background reconnect when lost.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "state/backend.h"

struct pg_conn;
struct pg_result;

namespace cellgate::state {

struct PgResultFree {
  void operator()(pg_result* r) const;
};
using PgResult = std::unique_ptr<pg_result, PgResultFree>;
using PgParams = std::vector<std::optional<std::string>>;  // text values; nullopt is NULL

// The URL with its password (user:password@ or password=…) replaced by ***, for messages and logs.
std::string redact_url(std::string_view url);

// Order of a call: take the live connection, or the one the reconnect thread has made since, or fail
// at once (kUnavailable) while it is still trying; send; wait for the answer against the deadline;
// on a lost connection, hand over to the reconnect thread and fail with kUnavailable. The calling
// thread therefore never waits for a connect, and waits for an answer at most the deadline.
// query() is for one thread at a time; the reconnect thread touches only the connection it makes.
class PostgresLink {
 public:
  // Connects (retrying refusals until options.connect_wait has passed) or fails with one line.
  static common::Result<std::unique_ptr<PostgresLink>> open(const std::string& url, const DatabaseOptions& options);
  ~PostgresLink();
  PostgresLink(const PostgresLink&) = delete;
  PostgresLink& operator=(const PostgresLink&) = delete;

  const std::string& name() const { return name_; }
  // Counts connections: a transaction begun on one must never continue on the next.
  uint64_t generation() const { return generation_; }
  // params null: the simple protocol (several statements, no parameters); else one statement with
  // $n parameters. require_generation: fail (kUnavailable) rather than run on another connection.
  // Returns the last statement's result; an SQL error maps its SQLSTATE to an Errc.
  common::Result<PgResult> query(const std::string& sql, const PgParams* params,
                                 std::optional<uint64_t> require_generation = std::nullopt);

 private:
  PostgresLink(std::string url, const DatabaseOptions& options);
  common::Result<pg_conn*> acquire();
  common::Error lose(std::string why);
  void reconnect_loop();

  const std::string url_;
  const std::string name_;
  const DatabaseOptions options_;
  pg_conn* conn_ = nullptr;  // the calling thread's
  uint64_t generation_ = 0;

  std::mutex mutex_;  // guards what follows: shared with the reconnect thread
  std::condition_variable wake_;
  pg_conn* fresh_ = nullptr;  // made by the reconnect thread, not yet taken
  std::string last_error_;
  bool reconnecting_ = false;
  bool stopping_ = false;
  std::thread reconnector_;
};

}  // namespace cellgate::state
