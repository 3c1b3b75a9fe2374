// SPDX-License-Identifier: BSD-3-Clause
// zmq_stream: one ZeroMQ socket driven by an Asio io_context through ZMQ_FD (no extra thread).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <zmq.hpp>

namespace cellgate::launcher {

// Frames of one multipart message, valid only during the callback.
using FrameViews = std::vector<std::string_view>;

// Runs on the io thread only. ZMQ_FD is edge-triggered: after every readiness wake-up, and after every
// send (which may consume the edge), the socket is drained until it has no input (recv's EAGAIN, or
// ZMQ_EVENTS without POLLIN for REQ).
class ZmqStream {
 public:
  using OnMessage = std::function<void(const FrameViews&)>;

  ZmqStream(boost::asio::io_context& io, zmq::context_t& ctx, zmq::socket_type type);
  ~ZmqStream();
  ZmqStream(const ZmqStream&) = delete;
  ZmqStream& operator=(const ZmqStream&) = delete;

  zmq::socket_t& socket() { return socket_; }
  void connect(const std::string& endpoint);
  // Starts delivering received messages to on_message.
  void start(OnMessage on_message);
  // Sends one multipart message without blocking. Returns false if ZMQ refused it (HWM or closed).
  bool send(const std::vector<std::string>& frames);
  void close();

 private:
  void arm();
  void drain();

  zmq::socket_t socket_;
  boost::asio::posix::stream_descriptor fd_;
  OnMessage on_message_;
  std::vector<zmq::message_t> parts_;
  FrameViews views_;
  bool ask_first_;  // REQ: ZMQ_EVENTS before recv
  bool armed_ = false;
  bool draining_ = false;
  bool closed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace cellgate::launcher
