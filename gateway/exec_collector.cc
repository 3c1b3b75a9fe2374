// SPDX-License-Identifier: BSD-3-Clause
// exec_collector: collects what one execute_request produced.
#include "gateway/exec_collector.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/random.h"
#include "protocol/json_text.h"

namespace cellgate::gateway {

namespace asio = boost::asio;
using launcher::Channel;
using launcher::KernelState;
using nlohmann::json;

namespace {

// Kernel content is untrusted: a field of the wrong type must not throw.
std::string str_field(const json& c, const char* key, const char* fallback = "") {
  auto it = c.find(key);
  return it != c.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}
json obj_field(const json& c, const char* key) {
  auto it = c.find(key);
  return it != c.end() && it->is_object() ? *it : json::object();
}
json any_field(const json& c, const char* key) {
  auto it = c.find(key);
  return it != c.end() ? *it : json();
}

}  // namespace

ExecCollector::ExecCollector(asio::any_io_executor ex, size_t limit, std::function<void(const json&)> on_output)
    : wake_(ex), limit_(limit), on_output_(std::move(on_output)) {
  wake_.expires_at(asio::steady_timer::time_point::max());
}

void ExecCollector::on_reply(Channel channel, const protocol::Message& m, const std::string& type) {
  const bool reply = channel == Channel::kShell && type == "execute_reply";
  // Only the reply and what follows it time the quiet wait (wait_until): earlier messages need no clock.
  if (reply || got_reply_) last_heard_ = std::chrono::steady_clock::now();
  if (reply) {
    auto c = protocol::parse_untrusted_json(m.content);
    if (c.is_object()) {
      reply_status_ = str_field(c, "status", "error");
      if (c.contains("execution_count") && c["execution_count"].is_number()) count_ = c["execution_count"];
      // The reply is authoritative for the error (a silent execute may publish none on iopub).
      if (reply_status_ == "error") {
        if (auto e = str_field(c, "ename"); !e.empty()) ename_ = e;
        if (auto v = str_field(c, "evalue"); !v.empty() || evalue_.empty()) evalue_ = v;
      } else if (reply_status_ == "aborted" && ename_.empty()) {
        ename_ = "Aborted";
      }
    }
    // The gateway's after-execute snapshot rides in the reply's metadata.
    auto md = protocol::parse_untrusted_json(m.metadata);
    if (md.is_object() && md.contains("cellgate")) workspace_ = md["cellgate"];
    got_reply_ = true;
    wake_.cancel();  // the wait now also ends kQuietAfterReply after the last message
  } else if (channel == Channel::kIopub) {
    // Past the budget an output is not kept: its content is not parsed either (a flooding cell would
    // make the io thread parse all of it for nothing).
    if (truncated_ && (type == "stream" || type == "display_data" || type == "update_display_data" ||
                       type == "execute_result"))
      return;
    auto c = protocol::parse_untrusted_json(m.content);
    if (!c.is_object()) return;
    if (type == "status") {
      if (str_field(c, "execution_state") == "idle") got_idle_ = true;
    } else {
      add_output(type, c);
    }
  }
  if (done()) wake_.cancel();
}

void ExecCollector::on_state(KernelState state, const std::string& reason) {
  if (state == KernelState::kDead || state == KernelState::kRestarting) {
    died_ = true;
    // A restart asked for by someone (REST, another client) carries no reason of its own.
    death_reason_ = !reason.empty()                      ? reason
                    : state == KernelState::kRestarting ? "the kernel was restarted during the execution"
                                                         : "the kernel died during the execution";
    wake_.cancel();
  }
}

asio::awaitable<void> ExecCollector::wait_until(std::chrono::steady_clock::time_point deadline) {
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) co_return;
    auto wake = deadline;
    if (got_reply_) {
      if (now >= last_heard_ + kQuietAfterReply) {
        got_idle_ = idle_lost_ = true;
        co_return;
      }
      wake = std::min(wake, last_heard_ + kQuietAfterReply);
    }
    wake_.expires_at(wake);
    boost::system::error_code ec;
    co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

void ExecCollector::add_output(const std::string& type, json& c) {
  json out;
  if (type == "stream") {
    out = {{"type", "stream"}, {"name", str_field(c, "name", "stdout")}, {"text", str_field(c, "text")}};
  } else if (type == "display_data" || type == "execute_result" || type == "update_display_data") {
    out = {{"type", type}, {"data", obj_field(c, "data")}, {"metadata", obj_field(c, "metadata")}};
    if (type == "execute_result") out["execution_count"] = any_field(c, "execution_count");
    if (c.contains("transient")) out["transient"] = c["transient"];
  } else if (type == "error") {
    auto tb = any_field(c, "traceback");
    out = {{"type", "error"}, {"ename", str_field(c, "ename")}, {"evalue", str_field(c, "evalue")},
           {"traceback", tb.is_array() ? tb : json::array()}};
    saw_error_ = true;
    if (ename_.empty()) {
      ename_ = out["ename"];
      evalue_ = out["evalue"];
    }
  } else if (type == "clear_output") {
    // What a notebook would show: the cell's outputs so far are gone. The budget is not given back:
    // it bounds what the cell makes the gateway send and hold (a streaming client that does not read,
    // a cell that prints and clears in a loop), not what is left in the end.
    outputs_ = json::array();
    out = {{"type", "clear_output"}};
    constexpr size_t kClearBytes = 24;  // {"type":"clear_output"}
    if (bytes_ + kClearBytes > limit_) {
      truncated_ = true;
      bytes_ = limit_;
      return;
    }
    bytes_ += kClearBytes;
    if (on_output_) on_output_(out);
    return;
  } else {
    return;  // execute_input, comm traffic: not outputs
  }
  size_t size = out.dump(-1, ' ', false, json::error_handler_t::replace).size();
  if (bytes_ + size > limit_) {
    if (type == "stream" && bytes_ < limit_) {
      std::string text = out["text"];
      text.resize(std::min(text.size(), limit_ - bytes_));
      out["text"] = text;
      if (on_output_) on_output_(out);
      append(out);
    }
    truncated_ = true;
    bytes_ = limit_;
    return;
  }
  bytes_ += size;
  if (on_output_) on_output_(out);
  append(out);
}

void ExecCollector::append(json& out) {
  if (out["type"] == "stream" && !outputs_.empty()) {
    json& last = outputs_.back();
    if (last["type"] == "stream" && last["name"] == out["name"]) {
      last["text"] = last["text"].get<std::string>() + out["text"].get<std::string>();
      return;
    }
  }
  outputs_.push_back(std::move(out));
}

protocol::Message make_execute_request(const std::string& code, bool silent, bool store_history, std::string& msg_id,
                                       bool stop_on_error) {
  auto msg = protocol::make_message(
      "execute_request", "cellgate-agent-" + common::random_hex(8),
      json{{"code", code}, {"silent", silent}, {"store_history", store_history}, {"user_expressions", json::object()},
           {"allow_stdin", false}, {"stop_on_error", stop_on_error && !silent}}
          .dump());
  auto header = protocol::peek_header(msg.header);
  msg_id = header ? header->msg_id : "";
  return msg;
}

}  // namespace cellgate::gateway
