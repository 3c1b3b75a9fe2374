// SPDX-License-Identifier: BSD-3-Clause
// zmtp_stream: the client end of one kernel channel (DEALER, SUB or REQ), speaking ZMTP 3.0 on a
// non-blocking socket owned by the gateway's io thread.
//
// Why not libzmq: its I/O thread hands every message to the caller's thread through a mailbox
// (an eventfd write, a poll and a getpid per message, plus two context switches); that was most of
// the gateway's CPU per execute. Here a burst of kernel messages costs one epoll wake-up and one
// read(2), and messages are handed over as views into the read buffer.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <sys/socket.h>  // ucred (_GNU_SOURCE)

#include "common/result.h"
#include "kernel-launcher/quiet_timer.h"
#include "kernel-launcher/read_budget.h"
#include "kernel-launcher/read_pace.h"
#include "protocol/zmtp.h"

namespace cellgate::launcher {

// Frames of one multipart message, valid only during the callback.
using FrameViews = std::vector<std::string_view>;

class ZmtpStream {
 public:
  using OnMessage = std::function<void(const FrameViews&)>;
  // Who listens at a unix socket path, asked after each connect and before a byte is sent: the path
  // is in the kernel's reach, and could be a symlink to any socket on the host.
  enum class Peer { kOk, kUnknown, kRefused };  // kUnknown: ask again at the next retry
  using PeerCheck = std::function<Peer(const ucred& listener)>;
  // A kernel's message larger than this is dropped as it streams past (and logged), not buffered.
  static constexpr uint64_t kMaxMessageBytes = 512ull << 20;
  static constexpr size_t kMaxFrames = 1024;
  // Bytes queued for a kernel that does not read (or has not bound yet) before send refuses more.
  static constexpr size_t kMaxQueuedBytes = 256u << 20;

  // identity: the routing id a DEALER announces (the kernel's ROUTER addresses replies to it).
  ZmtpStream(boost::asio::io_context& io, protocol::zmtp::SocketType type, std::string identity = {},
             uint64_t max_message_bytes = kMaxMessageBytes);
  ~ZmtpStream();
  ZmtpStream(const ZmtpStream&) = delete;
  ZmtpStream& operator=(const ZmtpStream&) = delete;

  // "ipc://path" or "tcp://ip:port". Connects now if the kernel listens, else retries (5 ms, doubling
  // to 50 ms) until it does, as a libzmq connect would; a lost connection is retried the same way.
  common::Status connect(const std::string& endpoint);
  // Set before connect. Without a check every peer is accepted.
  void set_peer_check(PeerCheck check) { peer_check_ = std::move(check); }
  // A message over the bound was dropped: called with its frames before the oversized one.
  using OnDropped = std::function<void(const FrameViews& head)>;
  void set_on_dropped(OnDropped on_dropped) { on_dropped_ = std::move(on_dropped); }
  // Set before connect: buffers for messages over ReadBudget::kFloor come out of it; a message it
  // cannot cover is dropped like one over the bound. Without a budget only the bound applies.
  void set_read_budget(std::shared_ptr<ReadBudget> budget) { budget_ = std::move(budget); }
  // Reads at most bytes_per_second (a burst of one second's worth; 0 = as fast as it comes): past it
  // the socket is left unread until the rate allows more, whatever hold() and release() do meanwhile.
  void set_read_pace(uint64_t bytes_per_second) { pace_ = ReadPace(bytes_per_second); }
  bool paced() const { return paced_; }
  // Starts delivering received messages (REQ: without the empty delimiter) to on_message.
  void start(OnMessage on_message);
  // Queues one multipart message and writes what the socket takes now. Messages sent before the
  // handshake wait for it. Returns false once closed, or when kMaxQueuedBytes are already waiting.
  bool send(const std::vector<std::string>& frames);
  void close();
  // Stops reading this socket, and being woken by it, for at most at_most or until release(): what
  // arrives meanwhile waits in the socket. release() reads it at once, then watches again.
  void hold(std::chrono::microseconds at_most);
  void release();
  bool held() const { return held_; }
  bool handshaken() const { return fd_ >= 0 && decoder_.ready(); }

 private:
  void try_connect();
  void on_connected();
  void disconnect();
  void arm_read();
  void unpace();
  void on_readable();
  bool on_unit(protocol::zmtp::Unit unit, const FrameViews& frames);
  void flush();
  bool consume(std::string_view data, const protocol::zmtp::Decoder::OnUnit& sink);
  void keep_pending(std::string_view rest);
  bool reserve(size_t cap);
  void free_pending();
  void drop_written();

  boost::asio::io_context& io_;
  protocol::zmtp::SocketType type_;
  std::string identity_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  std::string endpoint_;
  int fd_ = -1;  // owned by desc_ while >= 0
  uint64_t conn_ = 0;  // which connection a pending handler belongs to (fd numbers are reused)
  boost::asio::posix::stream_descriptor desc_;
  boost::asio::steady_timer retry_;
  QuietTimer hold_timer_;  // ends a hold(); usually disarmed first, which must not wake us
  ReadPace pace_;
  QuietTimer pace_timer_;  // ends a pause of the pace: reads on
  bool paced_ = false;     // over the pace: nothing reads until pace_timer_ fires
  int retry_ms_ = 5;
  protocol::zmtp::Decoder decoder_;
  OnMessage on_message_;
  PeerCheck peer_check_;
  OnDropped on_dropped_;
  uint64_t max_message_bytes_;
  bool refusal_logged_ = false;
  FrameViews views_;
  // Outgoing: the greeting and READY (the same for every connection), then queued messages (ends_
  // marks where each message ends, so a lost connection drops only a message it had partly written).
  const std::string hello_;
  size_t hello_sent_ = 0;
  std::string out_;
  size_t out_sent_ = 0;
  std::deque<size_t> ends_;
  bool write_armed_ = false;
  // Incoming bytes of a unit that spans reads (empty between messages: reads go to a shared buffer).
  std::unique_ptr<char[]> pending_;
  size_t pending_len_ = 0;
  size_t pending_cap_ = 0;
  std::shared_ptr<ReadBudget> budget_;
  uint64_t budgeted_ = 0;  // of pending_cap_, taken from budget_
  bool read_armed_ = false;
  bool parsing_ = false;  // the decoder reads pending_: a disconnect must not free it
  bool backlog_ = false;  // a turn ended with whole messages left in pending_
  bool closed_ = false;
  bool held_ = false;  // desc_ does not hold fd_: it is out of the reactor
  uint64_t read_gen_ = 0;  // a read wait cancelled by hold() completes late: it must not count
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace cellgate::launcher
