// SPDX-License-Identifier: BSD-3-Clause
// entry: one journal entry as the gateway records it (an execution, a restart), who sent it, and the
// bounds that keep what one entry and one kernel hold in memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cellgate::journal {

// Who sent an execute_request. The user is the authenticated one; the client names the path it came by.
struct Origin {
  std::string user;     // "" for the gateway's own executes
  std::string client;   // one of the client:: names below
  std::string session;  // the WebSocket's session_id ("" for REST)
};

namespace client {
inline constexpr const char* kWebSocket = "websocket";     // a Jupyter client over the kernel WebSocket
inline constexpr const char* kCellgateRun = "cellgate-run";  // `cellgate run` (a WebSocket client that says so)
inline constexpr const char* kExecute = "execute";          // POST /api/kernels/{id}/execute
inline constexpr const char* kTools = "tools";              // POST /api/kernels/{id}/tools/exec
inline constexpr const char* kMcp = "mcp";                  // the MCP tools (REST calls that say so)
inline constexpr const char* kNotebookHttp = "notebook-http";
inline constexpr const char* kReproduce = "reproduce";
inline constexpr const char* kSeed = "seed";                // a seed notebook's cell, on every launch
inline constexpr const char* kGateway = "gateway";          // the gateway's own (env around an execute)
}  // namespace client

// The client names a caller may claim for itself (X-Cellgate-Client): a label in the owner's journal,
// never an identity (the user is the token's).
const char* claimed_client(std::string_view header, const char* fallback);

enum class Kind { kExecute, kRestart, kDied, kGatewayRestart };
const char* to_string(Kind kind);

struct Output {
  std::string msg_type;  // stream, display_data, execute_result, error, update_display_data, clear_output
  std::string content;   // the iopub message's content as the kernel sent it (a verified JSON object)
};

struct Entry {
  std::string kernel_id;
  std::string owner;
  int64_t seq = 0;
  Kind kind = Kind::kExecute;
  std::string msg_id;
  Origin origin;
  bool silent = false;
  std::string code;         // cut at Bounds::entry_bytes
  uint64_t code_bytes = 0;  // as sent
  int64_t requested_ns = 0;  // system clock: the gateway sent the request to the kernel
  int64_t started_ns = 0;    // the kernel said busy for it (0: never)
  int64_t ended_ns = 0;      // the kernel said idle (or the entry was ended otherwise)
  std::string status = "running";  // ok | error | aborted | running | interrupted | restarted | dead | ...
  std::optional<int64_t> execution_count;
  std::vector<Output> outputs;
  uint64_t output_bytes = 0;     // of content kept
  uint64_t dropped_outputs = 0;  // past the bounds, counted only
  uint64_t dropped_bytes = 0;
  std::string snapshot_before, snapshot_after;
  std::string reason;  // a restart's or death's; how an execution ended when not by its reply
  uint64_t unrecorded_before = 0;  // this kernel's entries the writer dropped since the last one it kept

  // The bytes this entry holds (what the bounds count).
  uint64_t held_bytes() const { return code.size() + output_bytes; }
};

struct Bounds {
  uint64_t entry_bytes = 1 << 20;         // code and outputs kept per entry
  uint64_t inline_output_bytes = 4 << 10;  // an output above this goes to the object store
  uint64_t kernel_open_bytes = 4 << 20;   // what one kernel's running entries hold together
  size_t kernel_open_entries = 1024;      // running entries per kernel; past it, entries are unobserved
};

}  // namespace cellgate::journal
