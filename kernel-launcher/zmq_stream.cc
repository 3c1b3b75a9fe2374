// SPDX-License-Identifier: BSD-3-Clause
// zmq_stream: one ZeroMQ socket driven by an Asio io_context through ZMQ_FD.
#include "kernel-launcher/zmq_stream.h"

#include <boost/asio/post.hpp>

#include "common/log.h"

namespace cellgate::launcher {

namespace asio = boost::asio;

ZmqStream::ZmqStream(asio::io_context& io, zmq::context_t& ctx, zmq::socket_type type)
    : socket_(ctx, type), fd_(io), ask_first_(type == zmq::socket_type::req) {
  socket_.set(zmq::sockopt::linger, 0);
  // ipc connects retry every 100 ms by default while the kernel has not bound yet; 5 ms keeps a
  // start from being quantised to that (measured: jail-on-this-machine.md §1).
  socket_.set(zmq::sockopt::reconnect_ivl, 5);
  socket_.set(zmq::sockopt::reconnect_ivl_max, 200);
  // No silent drops on our side: the kernel's PUB has its own HWM; ours holds what it sends.
  socket_.set(zmq::sockopt::rcvhwm, 0);
  socket_.set(zmq::sockopt::sndhwm, 0);
  fd_.assign(socket_.get(zmq::sockopt::fd));
}

ZmqStream::~ZmqStream() { close(); }

void ZmqStream::connect(const std::string& endpoint) { socket_.connect(endpoint); }

void ZmqStream::start(OnMessage on_message) {
  on_message_ = std::move(on_message);
  drain();
}

void ZmqStream::close() {
  if (closed_) return;
  closed_ = true;
  *alive_ = false;
  boost::system::error_code ec;
  fd_.cancel(ec);
  fd_.release();  // the fd belongs to libzmq
  socket_.close();
}

void ZmqStream::arm() {
  if (armed_ || closed_) return;
  armed_ = true;
  fd_.async_wait(asio::posix::stream_descriptor::wait_read,
                 [this, alive = alive_](const boost::system::error_code& ec) {
                   if (!*alive) return;
                   armed_ = false;
                   if (ec) return;
                   drain();
                 });
}

void ZmqStream::drain() {
  if (closed_ || draining_) return;
  draining_ = true;
  auto alive = alive_;
  // Known empty: the last call that looked (a recv's EAGAIN or ZMQ_EVENTS) found no input, and in
  // doing so processed libzmq's pending commands, which is what re-arms ZMQ_FD's edge. Every such
  // look costs libzmq a poll(2) and a getpid(2), so a DEALER or SUB just reads until EAGAIN.
  bool empty = false;
  // Bound one burst so a flooding kernel cannot starve the other sockets on this thread.
  for (int budget = 256; budget > 0 && *alive; --budget) {
    // recv on a REQ socket that has not sent is an EFSM error, not EAGAIN: ask first.
    if (ask_first_ && !(socket_.get(zmq::sockopt::events) & ZMQ_POLLIN)) {
      empty = true;
      break;
    }
    parts_.clear();
    zmq::message_t part;
    auto got = socket_.recv(part, zmq::recv_flags::dontwait);
    if (!got) {
      empty = true;
      break;
    }
    parts_.push_back(std::move(part));
    while (parts_.back().more()) {
      zmq::message_t next;
      (void)socket_.recv(next, zmq::recv_flags::none);  // the rest of a multipart is already here
      parts_.push_back(std::move(next));
    }
    views_.clear();
    for (auto& p : parts_) views_.emplace_back(static_cast<const char*>(p.data()), p.size());
    if (on_message_) on_message_(views_);
  }
  if (!*alive) return;
  draining_ = false;
  if (!empty && (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN)) {
    asio::post(fd_.get_executor(), [this, alive] {
      if (*alive) drain();
    });
  } else {
    arm();
  }
}

bool ZmqStream::send(const std::vector<std::string>& frames) {
  if (closed_ || frames.empty()) return false;
  bool ok = true;
  for (size_t i = 0; i < frames.size() && ok; ++i) {
    auto flags = i + 1 < frames.size() ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                                       : zmq::send_flags::dontwait;
    auto r = socket_.send(zmq::buffer(frames[i]), flags);
    ok = r.has_value();
  }
  // A send can consume the readiness edge of ZMQ_FD; look again for pending input.
  if (!draining_ && (socket_.get(zmq::sockopt::events) & ZMQ_POLLIN)) {
    auto alive = alive_;
    asio::post(fd_.get_executor(), [this, alive] {
      if (*alive) drain();
    });
  }
  return ok;
}

}  // namespace cellgate::launcher
