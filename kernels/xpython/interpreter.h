// SPDX-License-Identifier: BSD-3-Clause
// interpreter: xeus-python's interpreter with cellgate's kernel_info (no debugger advertised).
#pragma once

#include <string>

#include <xeus-python/xinterpreter.hpp>

namespace cellgate::xpython {

// xpyt::interpreter with two changes.
// SIGINT is armed only while code runs, as ipykernel does: SIG_IGN and blocked on the main thread
// while idle, Python's default_int_handler and unblocked during execute_request. xeus 2.4.1's
// zmq_poll loop does not retry EINTR: a SIGINT that reached an idle kernel made xkernel::start()
// throw "Interrupted system call", ending the kernel (measured: 4 of 10 jupyter_client shutdowns,
// which interrupt first). Call block_sigint_for_server() before xkernel::start() so the xeus
// threads it spawns inherit a blocked SIGINT and never see one.
// kernel_info_reply says "debugger": false, because this
// kernel runs with xeus' null debugger: xeus-python 0.14's debugpy bridge is not verified here
// (nor under the jail's seccomp policy), so it is not offered. Construct with the GIL held, after
// apply_python_fixups(); runs on the kernel's main thread like its base.
class Interpreter : public xpyt::interpreter {
 public:
  Interpreter() = default;

  // Main thread, GIL held, before the server starts: SIG_IGN for SIGINT, and SIGINT blocked.
  static void block_sigint_for_server();

 protected:
  nl::json execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                bool store_history, nl::json user_expressions, bool allow_stdin) override;
  nl::json kernel_info_request_impl() override;
};

}  // namespace cellgate::xpython
