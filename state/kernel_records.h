// SPDX-License-Identifier: BSD-3-Clause
// kernel_records: the kernels and sessions tables, kept so a restarted gateway can re-adopt its kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "state/database.h"

namespace cellgate::state {

struct KernelRecord {
  std::string id;
  std::string owner;             // user name
  std::string kernelspec;        // kernelspec name
  std::string workspace;         // workspace name (of owner)
  std::string runtime_dir;       // host dir with the connection file and ipc sockets
  int64_t helper_pid = 0;        // cellgate-jail (or plain child) pid; 0 = none
  std::string jail_status_file;  // where the helper reports the kernel's fate ("" = none)
  std::string created;           // iso8601
  std::string state;             // gateway's lifecycle word, e.g. starting, idle, busy, dead
  std::string node{};            // the node it runs on ("" = the one machine's; docs/cluster.md)
  std::string reason{};          // why it is dead ("node lost", ...); "" while it is not
  int64_t memory_bytes = 0;      // the memory limit placement committed for it (0 = none counted)
  std::string network{};         // its network policy's canonical JSON (egress/policy.h); "" = none
};

struct SessionRow {
  std::string id;
  std::string owner;
  std::string path;
  std::string name;
  std::string type;
  std::string kernel_id;  // must name a kernels row; deleting the kernel deletes its sessions
};

// All functions: one statement (or transaction) on db, errors as Result, never throw. Errc::kConflict
// on a duplicate id or a missing kernel; Errc::kNotFound when the id names no row.
common::Status insert_kernel(Database& db, const KernelRecord& k);
common::Result<KernelRecord> get_kernel(Database& db, const std::string& id);
// Every kernel, or only owner's when owner is set; oldest first.
common::Result<std::vector<KernelRecord>> list_kernels(Database& db, const std::optional<std::string>& owner = {});
common::Status set_kernel_state(Database& db, const std::string& id, const std::string& state);
// state "dead" with the reason, unless it is dead already (the first reason stays).
common::Status set_kernel_dead(Database& db, const std::string& id, const std::string& reason);
// A row placement inserted (state "placing") becomes the kernel that started: its pid, status file and
// runtime dir, and possibly a new id (a warm kernel claimed instead of a cold start). kNotFound when the
// row is gone (its node was declared lost meanwhile).
common::Status confirm_placed_kernel(Database& db, const std::string& placed_id, const KernelRecord& started);
common::Status set_kernel_helper(Database& db, const std::string& id, int64_t helper_pid,
                                 const std::string& jail_status_file);
common::Status delete_kernel(Database& db, const std::string& id);
// A running kernel's network policy replaced (canonical JSON; "" = none and no proxy endpoint).
common::Status set_kernel_network(Database& db, const std::string& id, const std::string& network);

common::Status insert_session(Database& db, const SessionRow& s);
common::Result<SessionRow> get_session(Database& db, const std::string& id);
common::Result<std::vector<SessionRow>> list_sessions(Database& db, const std::optional<std::string>& owner = {});
// Rewrites path, name, type and kernel_id of the row with s.id (owner is not changed).
common::Status update_session(Database& db, const SessionRow& s);
common::Status delete_session(Database& db, const std::string& id);

}  // namespace cellgate::state
