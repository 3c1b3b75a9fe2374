// SPDX-License-Identifier: BSD-3-Clause
// zmtp: ZMTP 3.0 greeting, NULL handshake and framing (rfc.zeromq.org/spec/23, spec/37 for PING).
#include "protocol/zmtp.h"

#include <algorithm>
#include <cstring>

#include <fmt/core.h>

namespace cellgate::protocol::zmtp {

using common::Errc;
using common::make_error;

namespace {

constexpr uint8_t kMore = 0x01;
constexpr uint8_t kLong = 0x02;
constexpr uint8_t kCommand = 0x04;
constexpr uint64_t kMaxCommandBytes = 64 * 1024;  // READY with its metadata, PING, ERROR: all small

const char* type_name(SocketType t) {
  switch (t) {
    case SocketType::kDealer: return "DEALER";
    case SocketType::kSub: return "SUB";
    case SocketType::kReq: return "REQ";
  }
  return "?";
}

// The socket types a peer may have for ours to talk to it (ZMTP 3.0, "Socket type compatibility").
bool compatible(SocketType ours, std::string_view peer) {
  switch (ours) {
    case SocketType::kDealer: return peer == "ROUTER" || peer == "DEALER" || peer == "REP";
    case SocketType::kSub: return peer == "PUB" || peer == "XPUB";
    case SocketType::kReq: return peer == "REP" || peer == "ROUTER";
  }
  return false;
}

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void append_frame(std::string& out, uint8_t flags, std::string_view body) {
  uint64_t n = body.size();
  if (n > 255) {
    out.push_back(static_cast<char>(flags | kLong));
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
  } else {
    out.push_back(static_cast<char>(flags));
    out.push_back(static_cast<char>(n));
  }
  out.append(body);
}

void append_property(std::string& out, std::string_view name, std::string_view value) {
  out.push_back(static_cast<char>(name.size()));
  out.append(name);
  put_u32(out, static_cast<uint32_t>(value.size()));
  out.append(value);
}

struct Header {
  uint8_t flags = 0;
  uint64_t size = 0;
  size_t length = 0;  // bytes of the header itself; 0 when data holds less than a header
};

Header read_header(std::string_view data) {
  Header h;
  if (data.size() < 2) return h;
  h.flags = static_cast<uint8_t>(data[0]);
  if ((h.flags & kLong) == 0) {
    h.size = static_cast<uint8_t>(data[1]);
    h.length = 2;
    return h;
  }
  if (data.size() < 9) return h;
  for (size_t i = 1; i < 9; ++i) h.size = (h.size << 8) | static_cast<uint8_t>(data[i]);
  h.length = 9;
  return h;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return (x | 0x20) == (y | 0x20); });
}

// A command body: name-size, name, data.
bool split_command(std::string_view body, std::string_view& name, std::string_view& data) {
  if (body.empty() || static_cast<uint8_t>(body[0]) + 1u > body.size()) return false;
  name = body.substr(1, static_cast<uint8_t>(body[0]));
  data = body.substr(1 + name.size());
  return true;
}

}  // namespace

std::string hello(SocketType type, std::string_view identity) {
  CELLGATE_ASSERT(identity.size() <= 255);
  std::string out(kGreetingBytes, '\0');
  out[0] = static_cast<char>(0xff);  // signature: %xFF padding(8) %x7F
  out[9] = 0x7f;
  out[10] = 3;  // version 3.0
  out[11] = 0;
  std::memcpy(&out[12], "NULL", 4);  // mechanism, zero-padded to 20; as-server (32) 0; filler
  std::string ready;
  ready.push_back(5);
  ready.append("READY");
  append_property(ready, "Socket-Type", type_name(type));
  if (!identity.empty()) append_property(ready, "Identity", identity);
  append_frame(out, kCommand, ready);
  return out;
}

void append_message(std::string& out, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) append_frame(out, i + 1 < frames.size() ? kMore : 0, frames[i]);
}

void append_message(std::string& out, const std::vector<std::string_view>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) append_frame(out, i + 1 < frames.size() ? kMore : 0, frames[i]);
}

void append_pong(std::string& out, std::string_view context) {
  std::string body("\x04PONG");
  body.append(context.substr(0, 16));
  append_frame(out, kCommand, body);
}

Decoder::Decoder(SocketType ours, uint64_t max_message_bytes, size_t max_frames)
    : ours_(ours), max_bytes_(max_message_bytes), max_frames_(max_frames) {}

common::Result<size_t> Decoder::parse_greeting(std::string_view data) {
  // Checked as soon as each part arrives, so a peer that is not ZMTP fails at its first byte.
  if (!data.empty() && static_cast<uint8_t>(data[0]) != 0xff)
    return make_error(Errc::kBadRequest, "peer is not a ZeroMQ socket (bad greeting signature)");
  if (data.size() > 9 && (data[9] & 1) == 0)
    return make_error(Errc::kBadRequest, "peer speaks ZMTP 1.0, which is not supported");
  if (data.size() < kGreetingBytes) return size_t{0};
  auto major = static_cast<uint8_t>(data[10]);
  if (major < 3) return make_error(Errc::kBadRequest, fmt::format("peer speaks ZMTP {}.x; 3.0 or later is needed", major));
  std::string_view mechanism = data.substr(12, 20);
  if (mechanism != std::string_view("NULL\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 20)) {
    auto end = mechanism.find('\0');
    return make_error(Errc::kBadRequest, fmt::format("peer wants security mechanism '{}'; only NULL is supported",
                                                     mechanism.substr(0, end)));
  }
  return kGreetingBytes;
}

common::Status Decoder::check_ready(std::string_view body) {
  std::string_view name, props;
  if (!split_command(body, name, props)) return make_error(Errc::kBadRequest, "malformed handshake command");
  if (name == "ERROR") {
    std::string_view reason = props.empty() ? props : props.substr(1, static_cast<uint8_t>(props[0]));
    return make_error(Errc::kBadRequest, fmt::format("peer refused the handshake: {}", reason));
  }
  if (name != "READY") return make_error(Errc::kBadRequest, fmt::format("expected READY, got '{}'", name));
  std::string_view peer_type;
  while (!props.empty()) {
    size_t n = static_cast<uint8_t>(props[0]);
    if (props.size() < 1 + n + 4) return make_error(Errc::kBadRequest, "malformed READY metadata");
    std::string_view key = props.substr(1, n);
    const auto* p = reinterpret_cast<const uint8_t*>(props.data() + 1 + n);
    uint32_t len = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
    if (props.size() - (1 + n + 4) < len) return make_error(Errc::kBadRequest, "malformed READY metadata");
    std::string_view value = props.substr(1 + n + 4, len);
    if (iequals(key, "Socket-Type")) peer_type = value;
    props.remove_prefix(1 + n + 4 + len);
  }
  if (!compatible(ours_, peer_type))
    return make_error(Errc::kBadRequest, fmt::format("a {} socket cannot talk to a '{}' peer", type_name(ours_), peer_type));
  return common::ok();
}

common::Result<size_t> Decoder::discard(std::string_view data) {
  size_t pos = 0;
  while (state_ == State::kDiscard) {
    if (discard_left_ > 0) {
      uint64_t n = std::min<uint64_t>(discard_left_, data.size() - pos);
      discard_left_ -= n;
      pos += n;
      if (discard_left_ > 0) break;
    }
    if (!discard_more_) {
      state_ = State::kTraffic;
      break;
    }
    Header h = read_header(data.substr(pos));
    if (h.length == 0) break;
    if ((h.flags & ~(kMore | kLong)) != 0) return make_error(Errc::kBadRequest, "bad frame flags inside a message");
    pos += h.length;
    discard_left_ = h.size;
    discard_more_ = (h.flags & kMore) != 0;
  }
  wanted_ = 9;
  return pos;
}

bool Decoder::drop_message(const OnUnit& on_unit, uint64_t left, bool more) {
  drop_incomplete_ = false;
  discard_left_ = left;
  discard_more_ = more;
  state_ = State::kDiscard;
  return on_unit(Unit::kDropped, frames_);
}

common::Result<size_t> Decoder::parse(std::string_view data, const OnUnit& on_unit) {
  size_t pos = 0;
  for (;;) {
    std::string_view rest = data.substr(pos);
    if (state_ == State::kGreeting) {
      auto got = parse_greeting(rest);
      if (!got) return got.error();
      if (*got == 0) return pos;
      pos += *got;
      state_ = State::kHandshake;
      wanted_ = 2;
      continue;
    }
    if (state_ == State::kDiscard) {
      auto got = discard(rest);
      if (!got) return got.error();
      pos += *got;
      if (state_ == State::kDiscard) return pos;
      continue;
    }
    // One unit: a command frame, or a message's frames.
    frames_.clear();
    size_t off = 0;
    uint64_t total = 0;
    for (;;) {
      Header h = read_header(rest.substr(off));
      if (h.length == 0 && drop_incomplete_ && !frames_.empty()) {
        // Inside a message whose next frame header has not arrived: drop it from there on.
        const bool go_on = drop_message(on_unit, 0, true);
        pos += off;
        if (!go_on) return pos;
        break;
      }
      if (h.length == 0) {
        wanted_ = off + 9;
        return pos;
      }
      if ((h.flags & ~(kMore | kLong | kCommand)) != 0) return make_error(Errc::kBadRequest, "bad frame flags");
      const size_t avail = rest.size() - off - h.length;
      if ((h.flags & kCommand) != 0) {
        if (!frames_.empty() || (h.flags & kMore) != 0)
          return make_error(Errc::kBadRequest, "a command frame inside a message");
        if (h.size > kMaxCommandBytes) return make_error(Errc::kBadRequest, "command frame too large");
        if (avail < h.size) {
          wanted_ = off + h.length + h.size;
          return pos;
        }
        std::string_view body = rest.substr(off + h.length, h.size);
        pos += off + h.length + h.size;
        if (state_ == State::kHandshake) {
          if (auto st = check_ready(body); !st) return st.error();
          state_ = State::kTraffic;
          break;
        }
        std::string_view name, rest_of;
        if (!split_command(body, name, rest_of)) return make_error(Errc::kBadRequest, "malformed command");
        if (name == "ERROR") return make_error(Errc::kBadRequest, "peer sent ERROR");
        if (name == "PING" && rest_of.size() >= 2) {
          frames_.push_back(rest_of.substr(2, 16));  // TTL, then the context to echo
          if (!on_unit(Unit::kPing, frames_)) return pos;
        }
        break;  // other commands (PONG, SUBSCRIBE...) mean nothing to a client
      }
      if (state_ == State::kHandshake) return make_error(Errc::kBadRequest, "message before the READY handshake");
      total += h.size;
      const bool incomplete = avail < h.size;
      if (frames_.size() + 1 > max_frames_ || h.size > max_bytes_ || total > max_bytes_ ||
          (incomplete && drop_incomplete_)) {
        const bool go_on = drop_message(on_unit, h.size, (h.flags & kMore) != 0);  // frames_: data before pos
        pos += off + h.length;
        if (!go_on) return pos;
        break;
      }
      if (incomplete) {
        wanted_ = off + h.length + h.size;
        return pos;
      }
      frames_.push_back(rest.substr(off + h.length, h.size));
      off += h.length + h.size;
      if ((h.flags & kMore) == 0) {
        pos += off;
        wanted_ = 2;
        if (!on_unit(Unit::kMessage, frames_)) return pos;
        break;
      }
    }
  }
}

}  // namespace cellgate::protocol::zmtp
