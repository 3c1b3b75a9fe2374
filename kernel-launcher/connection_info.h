// SPDX-License-Identifier: BSD-3-Clause
// connection_info: a kernel's connection file (transport, endpoints, HMAC key).
#pragma once

#include <array>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace cellgate::launcher {

enum class Channel { kShell = 0, kIopub = 1, kStdin = 2, kControl = 3, kHb = 4 };
inline constexpr std::array<const char*, 5> kChannelNames = {"shell", "iopub", "stdin", "control", "hb"};

struct ConnectionInfo {
  std::string transport = "ipc";          // "ipc" or "tcp"
  std::string ip;                         // ipc: path prefix; tcp: address
  std::array<int, 5> ports{1, 2, 3, 4, 5};  // indexed by Channel
  std::string key;                        // hex of 32 random bytes
  std::string signature_scheme = "hmac-sha256";
  std::string kernel_name;

  // ZMQ endpoint: ipc://<ip>-<port> or tcp://<ip>:<port> (jupyter_client connect.py).
  std::string endpoint(Channel c) const;
  nlohmann::json to_json() const;
};

// ipc transport under dir: sockets <dir>/k-1 … k-5, a fresh 256-bit key. Fails (kBadRequest)
// when a socket path would exceed 107 bytes, the sun_path limit (unix(7)).
common::Result<ConnectionInfo> make_ipc_connection(const std::string& dir, const std::string& kernel_name);

// tcp transport on ip with five free ports (bind-to-0, as jupyter_client does; racy by nature).
common::Result<ConnectionInfo> make_tcp_connection(const std::string& ip, const std::string& kernel_name);

// Writes the file with mode 0600 (it holds the key), via a temp file and rename.
common::Status write_connection_file(const ConnectionInfo& info, const std::string& path);

}  // namespace cellgate::launcher
