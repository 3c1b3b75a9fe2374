// SPDX-License-Identifier: BSD-3-Clause
// zmtp_stream: a kernel channel over ZMTP 3.0 on the io thread.
#include "kernel-launcher/zmtp_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <boost/asio/post.hpp>
#include <fmt/core.h>

#include "common/assert.h"
#include "common/log.h"
#include "kernel-launcher/scratch_lease.h"

namespace cellgate::launcher {

namespace asio = boost::asio;
namespace zmtp = protocol::zmtp;
using common::Errc;
using common::make_error;

namespace {

// libzmq's reconnect_ivl doubling, capped lower: a kernel binds its sockets 50-500 ms after it is
// spawned, and each late look at the path delays its start by up to the cap.
constexpr int kMaxRetryMs = 50;
constexpr int kReadsPerWake = 64;  // then yield, so one flooding kernel cannot starve the others
constexpr int kMessagesPerTurn = 256;  // the same for a flood of small messages
// And for a flood of large ones: 64 reads of 128 KiB were 8 MiB per turn, about 20 ms of HMAC and
// parsing on this host, which every other kernel's reply waited behind (issue 20's noisy-neighbour
// bench: a neighbour's `1+1` went from 4 to 17 ms p50 while one kernel printed 140 MB/s). A turn of
// 256 KiB costs well under a millisecond; a large message simply takes several turns.
constexpr size_t kBytesPerTurn = 256 * 1024;

}  // namespace

ZmtpStream::ZmtpStream(asio::io_context& io, zmtp::SocketType type, std::string identity, uint64_t max_message_bytes)
    : io_(io), type_(type), identity_(std::move(identity)), desc_(io), retry_(io), hold_timer_(io, [this] { release(); }),
      pace_timer_(io, [this] { unpace(); }),
      decoder_(type, max_message_bytes, kMaxFrames), max_message_bytes_(max_message_bytes),
      hello_(zmtp::hello(type_, identity_)) {}

ZmtpStream::~ZmtpStream() {
  close();
  free_pending();
}

common::Status ZmtpStream::connect(const std::string& endpoint) {
  endpoint_ = endpoint;
  std::string_view ep(endpoint);
  if (ep.starts_with("ipc://")) {
    auto path = ep.substr(6);
    sockaddr_un un{};
    if (path.empty() || path.size() >= sizeof un.sun_path)
      return make_error(Errc::kBadRequest, fmt::format("ipc path of {} is empty or too long", endpoint));
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, path.data(), path.size());
    std::memcpy(&addr_, &un, sizeof un);
    addr_len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  } else if (ep.starts_with("tcp://")) {
    auto rest = ep.substr(6);
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) return make_error(Errc::kBadRequest, "no port in " + endpoint);
    std::string host(rest.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    int port = 0;
    for (char c : rest.substr(colon + 1)) port = (c >= '0' && c <= '9' && port < 65536) ? port * 10 + (c - '0') : -1;
    if (port <= 0 || port > 65535) return make_error(Errc::kBadRequest, "bad port in " + endpoint);
    sockaddr_in in4{};
    sockaddr_in6 in6{};
    if (::inet_pton(AF_INET, host.c_str(), &in4.sin_addr) == 1) {
      in4.sin_family = AF_INET;
      in4.sin_port = htons(static_cast<uint16_t>(port));
      std::memcpy(&addr_, &in4, sizeof in4);
      addr_len_ = sizeof in4;
    } else if (::inet_pton(AF_INET6, host.c_str(), &in6.sin6_addr) == 1) {
      in6.sin6_family = AF_INET6;
      in6.sin6_port = htons(static_cast<uint16_t>(port));
      std::memcpy(&addr_, &in6, sizeof in6);
      addr_len_ = sizeof in6;
    } else {
      return make_error(Errc::kBadRequest, "kernel address must be a numeric IP: " + endpoint);
    }
  } else {
    return make_error(Errc::kBadRequest, "unsupported kernel transport: " + endpoint);
  }
  try_connect();
  return common::ok();
}

void ZmtpStream::start(OnMessage on_message) { on_message_ = std::move(on_message); }

void ZmtpStream::try_connect() {
  if (closed_) return;
  int fd = ::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return disconnect();
  if (addr_.ss_family != AF_UNIX) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), addr_len_);
  int err = rc == 0 ? 0 : errno;
  boost::system::error_code ec;
  desc_.assign(fd, ec);
  if (ec) {
    ::close(fd);
    return disconnect();
  }
  fd_ = fd;
  ++conn_;
  if (err == 0 && addr_.ss_family == AF_UNIX && peer_check_) {
    ucred cred{};
    socklen_t len = sizeof cred;
    auto verdict = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? peer_check_(cred) : Peer::kRefused;
    if (verdict != Peer::kOk) {
      if (verdict == Peer::kRefused && !refusal_logged_) {
        refusal_logged_ = true;
        common::log_warn("endpoint={} peer_uid={} peer_pid={} msg=\"not the kernel's socket; not connecting\"",
                         endpoint_, cred.uid, cred.pid);
      }
      return disconnect();
    }
  }
  if (err == 0) return on_connected();
  if (err != EINPROGRESS) return disconnect();  // ENOENT, ECONNREFUSED: the kernel has not bound yet
  write_armed_ = true;
  desc_.async_wait(asio::posix::stream_descriptor::wait_write,
                   [this, alive = alive_, conn = conn_, fd](const boost::system::error_code& e) {
                     if (!*alive || conn != conn_) return;
                     write_armed_ = false;
                     int so_error = 0;
                     socklen_t len = sizeof so_error;
                     if (e || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) < 0 || so_error != 0)
                       return disconnect();
                     on_connected();
                   });
}

void ZmtpStream::on_connected() {
  decoder_ = zmtp::Decoder(type_, max_message_bytes_, kMaxFrames);
  hello_sent_ = 0;
  if (type_ == zmtp::SocketType::kSub) {
    // ZMTP 3.0 subscribes with a message: 0x01 and the prefix (empty: everything).
    out_.clear();
    out_sent_ = 0;
    ends_.clear();
    zmtp::append_message(out_, std::vector<std::string_view>{std::string_view("\x01", 1)});
    ends_.push_back(out_.size());
  }
  flush();
  arm_read();
}

void ZmtpStream::disconnect() {
  ++conn_;  // handlers of this connection, even aborted ones run later, are now stale
  if (fd_ >= 0) {
    boost::system::error_code ec;
    if (held_) ::close(fd_);
    else desc_.close(ec);  // cancels both waits; their handlers see a different conn_ and return
    fd_ = -1;
  }
  held_ = false;
  hold_timer_.disarm();
  paced_ = false;
  pace_timer_.disarm();
  read_armed_ = write_armed_ = false;
  backlog_ = false;
  if (!parsing_) free_pending();  // else consume() frees it once the parse no longer reads it
  drop_written();
  if (closed_) return;
  retry_.expires_after(std::chrono::milliseconds(retry_ms_));
  retry_ms_ = std::min(retry_ms_ * 2, kMaxRetryMs);
  retry_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!ec && *alive) try_connect();
  });
}

void ZmtpStream::drop_written() {
  // A message partly written to a lost connection is gone (as with libzmq); unsent ones are kept.
  size_t start = 0;  // where the first message not wholly written begins
  while (!ends_.empty() && ends_.front() <= out_sent_) {
    start = ends_.front();
    ends_.pop_front();
  }
  size_t cut = start;
  if (!ends_.empty() && out_sent_ > start) {
    cut = ends_.front();
    ends_.pop_front();
  }
  out_.erase(0, cut);
  for (auto& e : ends_) e -= cut;
  out_sent_ = 0;
}

void ZmtpStream::close() {
  if (closed_) return;
  closed_ = true;
  *alive_ = false;
  boost::system::error_code ec;
  retry_.cancel();
  hold_timer_.disarm();
  pace_timer_.disarm();
  if (fd_ >= 0 && held_) ::close(fd_);
  else if (fd_ >= 0) desc_.close(ec);
  fd_ = -1;
  held_ = false;
}

bool ZmtpStream::send(const std::vector<std::string>& frames) {
  if (closed_ || frames.empty()) return false;
  if (out_.size() - out_sent_ > kMaxQueuedBytes) return false;
  if (type_ == zmtp::SocketType::kReq) {
    std::vector<std::string_view> with_delimiter{std::string_view()};
    with_delimiter.insert(with_delimiter.end(), frames.begin(), frames.end());
    zmtp::append_message(out_, with_delimiter);
  } else {
    zmtp::append_message(out_, frames);
  }
  ends_.push_back(out_.size());
  flush();
  return true;
}

void ZmtpStream::flush() {
  if (fd_ < 0 || write_armed_) return;
  for (;;) {
    iovec iov[2];
    int n = 0;
    if (hello_sent_ < hello_.size()) iov[n++] = {const_cast<char*>(hello_.data()) + hello_sent_, hello_.size() - hello_sent_};  // writev reads it
    if (decoder_.ready() && out_sent_ < out_.size()) iov[n++] = {out_.data() + out_sent_, out_.size() - out_sent_};
    if (n == 0) break;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) {
        // Not here: flush runs inside parse callbacks, whose frames point into our read buffer.
        write_armed_ = true;
        asio::post(io_, [this, alive = alive_, conn = conn_] {
          if (*alive && conn == conn_) disconnect();
        });
        return;
      }
      if (held_) {  // a write must wait on the reactor: watch the socket again
        held_ = false;
        hold_timer_.disarm();
        boost::system::error_code ec;
        desc_.assign(fd_, ec);
        arm_read();
      }
      write_armed_ = true;
      desc_.async_wait(asio::posix::stream_descriptor::wait_write,
                       [this, alive = alive_, conn = conn_](const boost::system::error_code& ec) {
                         if (!*alive || conn != conn_) return;
                         write_armed_ = false;
                         if (!ec) flush();
                       });
      return;
    }
    auto left = static_cast<size_t>(w);
    size_t h = std::min(left, hello_.size() - hello_sent_);
    hello_sent_ += h;
    out_sent_ += left - h;
  }
  if (out_sent_ == out_.size() && out_sent_ > 0) {
    out_sent_ = 0;
    ends_.clear();
    if (out_.capacity() > (1u << 20)) std::string().swap(out_);
    else out_.clear();
  }
}

void ZmtpStream::hold(std::chrono::microseconds at_most) {
  if (held_ || closed_ || fd_ < 0 || !decoder_.ready() || write_armed_ || backlog_) return;
  if (!hold_timer_.arm(at_most)) return;
  held_ = true;
  ++read_gen_;
  read_armed_ = false;
  desc_.release();  // EPOLL_CTL_DEL; the pending read wait completes aborted, with a stale read_gen_
}

void ZmtpStream::release() {
  if (!held_) return;
  held_ = false;
  hold_timer_.disarm();
  boost::system::error_code ec;
  desc_.assign(fd_, ec);
  if (ec) {
    ::close(fd_);
    fd_ = -1;
    return disconnect();
  }
  on_readable();
}

void ZmtpStream::unpace() {
  if (!paced_) return;
  paced_ = false;
  if (fd_ < 0 || closed_ || held_) return;  // release() reads on after a hold
  on_readable();
}

void ZmtpStream::arm_read() {
  if (read_armed_ || fd_ < 0 || held_ || paced_) return;
  read_armed_ = true;
  desc_.async_wait(asio::posix::stream_descriptor::wait_read,
                   [this, alive = alive_, conn = conn_, gen = read_gen_](const boost::system::error_code& ec) {
                     if (!*alive || conn != conn_ || gen != read_gen_) return;
                     read_armed_ = false;
                     if (!ec) on_readable();
                   });
}

void ZmtpStream::on_readable() {
  if (paced_) return;  // pace_timer_ reads on
  auto alive = alive_;
  // A turn ends after kMessagesPerTurn messages, kReadsPerWake reads or kBytesPerTurn, so one flooding kernel
  // cannot hold the io thread: the other sockets get a turn in between.
  int messages = 0;
  const zmtp::Decoder::OnUnit sink = [this, alive, &messages](zmtp::Unit u, const FrameViews& f) {
    if (!on_unit(u, f) || !*alive) return false;
    if (u != zmtp::Unit::kMessage || ++messages < kMessagesPerTurn) return true;
    backlog_ = true;  // pending_ may hold whole messages now: parse them before reading more
    return false;
  };
  if (backlog_) {
    backlog_ = false;
    if (!consume(std::string_view(pending_.get(), pending_len_), sink)) return;
  }
  ScratchLease scratch;
  // asio's epoll registration is edge-triggered: read until a short read (the socket had no more)
  // or EAGAIN before waiting again.
  size_t bytes = 0;
  for (int reads = 0; reads < kReadsPerWake && bytes < kBytesPerTurn && !backlog_; ++reads) {
    const bool in_scratch = pending_len_ == 0;
    if (!in_scratch) {
      size_t need = std::max(pending_len_ + ScratchLease::kBytes, decoder_.wanted());
      if (need > pending_cap_ && !reserve(std::max(need, pending_cap_ * 2)) && !reserve(need)) {
        // Over the read budget: this message goes as one over the bound would, as it streams past.
        decoder_.drop_incomplete();
        if (!consume(std::string_view(pending_.get(), pending_len_), sink)) return;
        continue;
      }
    }
    char* dst = in_scratch ? scratch.get() : pending_.get() + pending_len_;
    size_t room = in_scratch ? ScratchLease::kBytes : pending_cap_ - pending_len_;
    ssize_t n = ::read(fd_, dst, room);
    if (n == 0) return disconnect();
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return arm_read();
      return disconnect();
    }
    bytes += static_cast<size_t>(n);
    // Unpaced (the default) reads no clock.
    const auto pause = pace_.rate() == 0 ? std::chrono::microseconds(0)
                                         : pace_.charge(static_cast<uint64_t>(n), std::chrono::steady_clock::now());
    std::string_view data = in_scratch ? std::string_view(dst, static_cast<size_t>(n))
                                       : std::string_view(pending_.get(), pending_len_ + static_cast<size_t>(n));
    if (!consume(data, sink)) return;
    if (pause.count() > 0 && pace_timer_.arm(pause)) {
      // Over the pace: leave the rest in the socket (and what was parsed but not delivered in
      // pending_) until the timer; the kernel's own queue holds what it sends meanwhile.
      paced_ = true;
      return;
    }
    if (static_cast<size_t>(n) < room && !backlog_) return arm_read();
  }
  // Yield to the other sockets; come back without waiting for an edge that will not come.
  asio::post(io_, [this, alive, conn = conn_] {
    if (*alive && conn == conn_) on_readable();
  });
}

// Parses what was read and keeps the partial unit after it; false when the caller must stop (the
// stream went away in a callback, or the peer broke ZMTP and was disconnected).
bool ZmtpStream::consume(std::string_view data, const zmtp::Decoder::OnUnit& sink) {
  auto alive = alive_;
  const bool was_ready = decoder_.ready();
  parsing_ = true;
  auto used = decoder_.parse(data, sink);
  if (!*alive) return false;  // closed or destroyed in a callback: touch nothing
  parsing_ = false;
  if (fd_ < 0) {  // disconnected in a callback (a PONG that could not be written)
    free_pending();
    return false;
  }
  if (!used) {
    common::log_warn("endpoint={} msg=\"kernel broke ZMTP; reconnecting\" error=\"{}\"", endpoint_,
                     used.error().message);
    disconnect();
    return false;
  }
  keep_pending(data.substr(*used));
  if (!was_ready && decoder_.ready()) {
    retry_ms_ = 5;
    flush();  // what was queued before the handshake
    if (fd_ < 0) return false;
  }
  return true;
}

void ZmtpStream::keep_pending(std::string_view rest) {
  if (rest.empty()) {
    pending_len_ = 0;
    if (pending_cap_ > ReadBudget::kFloor) free_pending();  // a large message has passed: give its buffer back
    return;
  }
  if (pending_len_ > 0) {  // rest lies inside pending_
    std::memmove(pending_.get(), rest.data(), rest.size());
    pending_len_ = rest.size();
    return;
  }
  // rest lies in the scratch buffer, so it is under ScratchLease::kBytes: never over the budget's floor.
  // The next read grows the buffer to what the unit wants, and asks the budget for it.
  const bool ok = reserve(std::max(rest.size() + ScratchLease::kBytes, pending_cap_));
  CELLGATE_ASSERT(ok);
  std::memcpy(pending_.get(), rest.data(), rest.size());
  pending_len_ = rest.size();
}

// Grows pending_ to cap bytes, keeping its pending_len_ bytes; false (nothing changed) when the
// read budget cannot cover the growth.
bool ZmtpStream::reserve(size_t cap) {
  if (cap <= pending_cap_) return true;
  const uint64_t counted = cap > ReadBudget::kFloor ? cap : 0;
  if (budget_ && counted > budgeted_) {
    if (!budget_->take(counted - budgeted_)) return false;
    budgeted_ = counted;
  }
  std::unique_ptr<char[]> grown(new char[cap]);
  if (pending_len_ > 0) std::memcpy(grown.get(), pending_.get(), pending_len_);
  pending_ = std::move(grown);
  pending_cap_ = cap;
  return true;
}

void ZmtpStream::free_pending() {
  pending_.reset();
  pending_len_ = pending_cap_ = 0;
  if (budget_) budget_->give(budgeted_);
  budgeted_ = 0;
}

bool ZmtpStream::on_unit(zmtp::Unit unit, const FrameViews& frames) {
  switch (unit) {
    case zmtp::Unit::kMessage:
      if (!on_message_) return true;
      if (type_ == zmtp::SocketType::kReq) {
        // A reply is [empty delimiter, body...] (ZMTP REQ/REP, rfc 28).
        if (frames.empty() || !frames[0].empty()) return true;
        views_.assign(frames.begin() + 1, frames.end());
        on_message_(views_);
      } else {
        on_message_(frames);
      }
      return true;
    case zmtp::Unit::kPing:
      zmtp::append_pong(out_, frames.empty() ? std::string_view() : frames[0]);
      ends_.push_back(out_.size());
      flush();
      return fd_ >= 0;  // a failed write disconnected us: parse no further
    case zmtp::Unit::kDropped:
      common::log_warn("endpoint={} msg=\"dropped a kernel message over {} bytes or {} frames\"", endpoint_,
                       max_message_bytes_, kMaxFrames);
      if (on_dropped_) on_dropped_(frames);
      return true;
  }
  return true;
}

}  // namespace cellgate::launcher
