// SPDX-License-Identifier: BSD-3-Clause
// ws_test_util: byte builders for hand-made WebSocket frames in the protocol tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cellgate::protocol::testing {

inline std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

inline uint64_t get_le64(const std::string& s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
  return v;
}

// The legacy binary layout, as serialize_binary_message builds it.
inline std::string legacy_binary(const std::string& json_part, const std::vector<std::string>& buffers) {
  const auto nbufs = static_cast<uint32_t>(1 + buffers.size());
  uint32_t offset = 4 * (nbufs + 1);
  std::string out = be32(nbufs) + be32(offset);
  offset += static_cast<uint32_t>(json_part.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    out += be32(offset);
    offset += static_cast<uint32_t>(buffers[i].size());
  }
  out += json_part;
  for (const auto& b : buffers) out += b;
  return out;
}

// The v1 layout from explicit parts (parts = 4 JSON parts then buffers).
inline std::string v1_frame(const std::string& channel, const std::vector<std::string>& parts) {
  const uint64_t n = 2 + parts.size();
  uint64_t offset = 8 * (n + 1);
  std::string out = le64(n) + le64(offset);
  offset += channel.size();
  out += le64(offset);
  for (const auto& p : parts) {
    offset += p.size();
    out += le64(offset);
  }
  out += channel;
  for (const auto& p : parts) out += p;
  return out;
}

}  // namespace cellgate::protocol::testing
