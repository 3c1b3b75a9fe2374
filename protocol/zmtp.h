// SPDX-License-Identifier: BSD-3-Clause
// zmtp: ZeroMQ's wire protocol as bytes (ZMTP 3.0, rfc.zeromq.org/spec/23, NULL mechanism): the
// greeting, the READY handshake and message framing, for the client end of a kernel's channels.
// We greet as 3.0, so libzmq (ipykernel) and xeus-zmq peers speak 3.0 back: subscriptions are
// messages, and no heartbeat commands are expected (a PING is still answered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace cellgate::protocol::zmtp {

enum class SocketType { kDealer, kSub, kReq };

inline constexpr size_t kGreetingBytes = 64;

// Our greeting followed by our READY command (Socket-Type, and Identity when not empty). With the
// NULL mechanism both may be sent before the peer's greeting arrives.
std::string hello(SocketType type, std::string_view identity);

// Appends one message to out, a frame per element (MORE on all but the last).
void append_message(std::string& out, const std::vector<std::string>& frames);
void append_message(std::string& out, const std::vector<std::string_view>& frames);
// The PONG command that answers a PING's context (ZMTP 3.1 peers with heartbeats on).
void append_pong(std::string& out, std::string_view context);

// What parse found at the front of the input.
enum class Unit {
  kMessage,  // frames: the message's frames (views into the input)
  kPing,     // frames[0]: the context to echo in a PONG
  kDropped,  // a message over the size or frame bounds is skipped, byte for byte, unbuffered;
             // frames: its frames before the one that broke the bound (for a notice to its requester)
};

// Decodes the peer's side of one connection: greeting, READY, then messages. One decoder per
// connection (a reconnect starts a new one). Bounds: a message over max_message_bytes or
// max_frames is dropped while it streams past (reported once as kDropped), never buffered.
class Decoder {
 public:
  // Return false to stop parsing (the stream went away inside the callback).
  using OnUnit = std::function<bool(Unit, const std::vector<std::string_view>& frames)>;

  Decoder(SocketType ours, uint64_t max_message_bytes, size_t max_frames);

  // Consumes complete units from data, calling on_unit for each; returns how many bytes were
  // consumed (a partial unit stays for the next call, with more bytes after it). An error means
  // the peer broke the protocol: close the connection.
  common::Result<size_t> parse(std::string_view data, const OnUnit& on_unit);

  // True once the peer's READY has been read: messages may now be sent.
  bool ready() const { return state_ == State::kTraffic || state_ == State::kDiscard; }
  // How many bytes the unit at the front needs in all, as far as its headers tell (buffer sizing).
  size_t wanted() const { return wanted_; }
  // The caller cannot hold what wanted() asks for: the next parse drops the message at the front
  // from its first incomplete frame on, as if it were over the bound (kDropped, then discarded).
  void drop_incomplete() { drop_incomplete_ = true; }

 private:
  enum class State { kGreeting, kHandshake, kTraffic, kDiscard };
  common::Result<size_t> parse_greeting(std::string_view data);
  common::Status check_ready(std::string_view body);
  common::Result<size_t> discard(std::string_view data);
  // Enters kDiscard for the message at the front, `left` bytes into its current frame (more: frames
  // follow it), and reports it with the frames read so far. on_unit's answer: parse on?
  bool drop_message(const OnUnit& on_unit, uint64_t left, bool more);

  SocketType ours_;
  uint64_t max_bytes_;
  size_t max_frames_;
  State state_ = State::kGreeting;
  size_t wanted_ = kGreetingBytes;
  uint64_t discard_left_ = 0;  // kDiscard: bytes of the current frame still to skip
  bool discard_more_ = false;  // kDiscard: frames follow the current one
  bool drop_incomplete_ = false;
  std::vector<std::string_view> frames_;
};

}  // namespace cellgate::protocol::zmtp
