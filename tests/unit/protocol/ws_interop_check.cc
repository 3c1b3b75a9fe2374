// SPDX-License-Identifier: BSD-3-Clause
// ws_interop_check: our ws_codec against jupyter_server's serialisers (frames from ws_interop.py).
// Usage: ws_interop_check <python> <ws_interop.py>. Exit 0 when every frame matches byte for byte.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "protocol/ws_codec.h"

namespace {

using cellgate::protocol::decode_ws;
using cellgate::protocol::encode_ws;
using cellgate::protocol::Message;
using cellgate::protocol::WsProtocol;
using nlohmann::json;

int g_failures = 0;

void fail(const std::string& what) {
  ++g_failures;
  fmt::print(stderr, "FAIL: {}\n", what);
}

std::string unhex(const std::string& hex) {
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

void compare_bytes(const std::string& what, const std::string& ours, const std::string& theirs) {
  if (ours == theirs) return;
  size_t i = 0;
  while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
  fail(fmt::format("{}: differs at byte {} (ours {} bytes, jupyter_server {} bytes)\n  ours:   {:?}\n  theirs: {:?}",
                   what, i, ours.size(), theirs.size(), ours.substr(i, 60), theirs.substr(i, 60)));
}

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  if (::pclose(pipe) != 0) {
    fail("python generator exited with an error");
    out.clear();
  }
  return out;
}

void check_case(const json& c) {
  const std::string name = c.at("name");
  const std::string channel = c.at("channel");
  Message m;
  std::vector<std::string> parts;
  for (const auto& p : c.at("parts")) parts.push_back(unhex(p));
  m.header = parts.at(0);
  m.parent_header = parts.at(1);
  m.metadata = parts.at(2);
  m.content = parts.at(3);
  for (const auto& b : c.at("buffers")) m.buffers.push_back(unhex(b));
  const std::string v1 = unhex(c.at("v1"));
  const std::string legacy = unhex(c.at("legacy"));
  const bool legacy_binary = c.at("legacy_binary");

  // Server → client: our frames must be exactly jupyter_server's.
  auto ours_v1 = encode_ws(WsProtocol::kV1, channel, m);
  if (!ours_v1.binary) fail(name + ": v1 frame not binary");
  compare_bytes(name + " v1", ours_v1.data, v1);
  auto ours_legacy = encode_ws(WsProtocol::kLegacy, channel, m);
  if (ours_legacy.binary != legacy_binary) fail(name + ": legacy frame type differs");
  compare_bytes(name + " legacy", ours_legacy.data, legacy);

  // Client → server: jupyter_server's frames must decode to the same message.
  const bool client_channel = channel != "iopub";
  auto d1 = decode_ws(WsProtocol::kV1, v1, true);
  auto dl = decode_ws(WsProtocol::kLegacy, legacy, legacy_binary);
  if (!client_channel) {
    if (d1 || dl) fail(name + ": iopub frame from a client was accepted");
    return;
  }
  if (!d1) return fail(name + ": v1 decode failed: " + d1.error().message);
  if (!dl) return fail(name + ": legacy decode failed: " + dl.error().message);
  const Message& a = d1->message;
  if (d1->channel != channel || a.header != m.header || a.parent_header != m.parent_header ||
      a.metadata != m.metadata || a.content != m.content || a.buffers != m.buffers) {
    fail(name + ": v1 decode does not return the parts byte for byte");
  }
  const Message& b = dl->message;
  auto same_json = [](const std::string& x, const std::string& y) { return json::parse(x) == json::parse(y); };
  if (dl->channel != channel || !same_json(b.header, m.header) || !same_json(b.parent_header, m.parent_header) ||
      !same_json(b.metadata, m.metadata) || !same_json(b.content, m.content) || b.buffers != m.buffers) {
    fail(name + ": legacy decode does not return the same message");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: {} <python> <ws_interop.py>\n", argv[0]);
    return 2;
  }
  const std::string output = run(fmt::format("'{}' '{}'", argv[1], argv[2]));
  json doc = json::parse(output, nullptr, false);
  if (!doc.is_object() || !doc.contains("cases") || doc["cases"].empty()) {
    fail("no cases from the python generator");
    return 1;
  }
  for (const auto& c : doc["cases"]) check_case(c);
  fmt::print("{} cases checked against jupyter_server, {} failures\n", doc["cases"].size(), g_failures);
  return g_failures == 0 ? 0 : 1;
}
