// SPDX-License-Identifier: BSD-3-Clause
// exec_collector: collects what one execute_request produced (reply, outputs, death), for the agent
// API, seed notebooks and notebook-http.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "gateway/kernel_hub.h"

namespace cellgate::gateway {

// A RequestWatcher for one execute_request. Streams with the same name are merged; outputs past `limit`
// bytes are cut and marked truncated_. Io thread only.
class ExecCollector : public RequestWatcher {
 public:
  ExecCollector(boost::asio::any_io_executor ex, size_t limit, std::function<void(const nlohmann::json&)> on_output);

  void on_reply(launcher::Channel channel, const protocol::Message& m, const std::string& type) override;
  void on_state(launcher::KernelState state, const std::string& reason) override;

  // The reply and the kernel's idle status both arrived, or the kernel died. An aborted reply is the
  // end by itself: IRkernel aborts the requests queued behind an interrupted or failed cell with a
  // reply and no busy or idle (abort_shell_msg), and waiting for an idle would wait forever.
  bool done() const { return (got_reply_ && (got_idle_ || reply_status_ == "aborted")) || died_; }
  // Waits until done() or the deadline. After the reply, kQuietAfterReply with nothing more for the
  // request also ends the wait (idle_lost_): a kernel's iopub is a PUB socket, which drops what its
  // reader has not taken once its queue is full (ZMQ_SNDHWM, zmq_setsockopt(3): 1000 messages in
  // ipykernel), so a cell that floods its output can push its own idle out. The reply comes on shell,
  // which is not dropped. While the request's outputs still arrive, the wait goes on.
  boost::asio::awaitable<void> wait_until(std::chrono::steady_clock::time_point deadline);
  static constexpr std::chrono::seconds kQuietAfterReply{2};

  nlohmann::json outputs_ = nlohmann::json::array();
  std::string reply_status_ = "error";
  std::string ename_, evalue_;  // from the execute_reply (or the iopub error) when status is error
  nlohmann::json count_ = nullptr;
  nlohmann::json workspace_ = nullptr;
  bool got_reply_ = false, got_idle_ = false, died_ = false, truncated_ = false;
  bool idle_lost_ = false;  // the wait ended kQuietAfterReply after the reply, without an idle
  bool saw_error_ = false;  // an iopub error arrived (IRkernel's reply may still say "ok")
  std::string death_reason_;

 private:
  void add_output(const std::string& type, nlohmann::json& c);
  void append(nlohmann::json& out);

  boost::asio::steady_timer wake_;
  std::chrono::steady_clock::time_point last_heard_{};  // the request's last message, on any channel
  size_t limit_;
  size_t bytes_ = 0;
  std::function<void(const nlohmann::json&)> on_output_;
};

// An execute_request message with these options; its msg_id is returned in msg_id.
protocol::Message make_execute_request(const std::string& code, bool silent, bool store_history, std::string& msg_id,
                                       bool stop_on_error = true);

}  // namespace cellgate::gateway
