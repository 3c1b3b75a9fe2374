// SPDX-License-Identifier: BSD-3-Clause
// interpreter: xeus-python's interpreter with SIGINT armed only during execution, and our kernel_info.
#include <Python.h>  // first, as the Python C API asks

#include "kernels/xpython/interpreter.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <string>
#include <vector>

#include <pybind11/pybind11.h>

namespace cellgate::xpython {

namespace {

namespace py = pybind11;

void set_sigint_mask(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(how, &set, nullptr);
}

// GIL held. SIG_IGN also discards a pending SIGINT (POSIX sigaction: setting SIG_IGN on a pending
// signal discards it), and a SIGINT Python already recorded is dropped, so an interrupt that
// arrives after the cell finished does not hit the next one.
void disarm_sigint() {
  py::module_ signal = py::module_::import("signal");
  signal.attr("signal")(SIGINT, signal.attr("SIG_IGN"));
  if (PyErr_CheckSignals() != 0) PyErr_Clear();
}

// Main thread, SIGINT blocked: takes a SIGINT that arrived while idle (blocked and ignored, so
// still pending) off the queue, so that unblocking does not deliver it to the next cell.
void drain_pending_sigint() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  const timespec now{0, 0};
  for (int i = 0; i < 8 && sigtimedwait(&set, nullptr, &now) == SIGINT; ++i) {
  }
}

// A Python exception that escaped xeus-python's own execute path (a SIGINT landing in its
// plumbing before or after the user's code) as an error reply, instead of xeus' "ERROR: during
// execute_request" with no reply at all, which leaves the client waiting forever.
nl::json escaped_error_reply(xeus::xinterpreter& self, py::error_already_set& e) {
  std::string ename = "Error";
  std::string evalue;
  {
    py::gil_scoped_acquire gil;
    if (e.type()) ename = py::str(e.type().attr("__name__"));
    if (e.value()) evalue = py::str(e.value());
  }
  std::vector<std::string> traceback{ename + ": " + evalue};
  self.publish_execution_error(ename, evalue, traceback);
  return nl::json{{"status", "error"}, {"ename", ename}, {"evalue", evalue}, {"traceback", traceback}};
}

}  // namespace

void Interpreter::block_sigint_for_server() {
  disarm_sigint();
  set_sigint_mask(SIG_BLOCK);
}

nl::json Interpreter::execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                           bool store_history, nl::json user_expressions, bool allow_stdin) {
  drain_pending_sigint();
  {
    py::gil_scoped_acquire gil;
    py::module_ signal = py::module_::import("signal");
    signal.attr("signal")(SIGINT, signal.attr("default_int_handler"));
  }
  set_sigint_mask(SIG_UNBLOCK);
  nl::json reply;
  try {
    reply = xpyt::interpreter::execute_request_impl(execution_counter, code, silent, store_history,
                                                    std::move(user_expressions), allow_stdin);
  } catch (py::error_already_set& e) {
    set_sigint_mask(SIG_BLOCK);
    reply = escaped_error_reply(*this, e);
  }
  set_sigint_mask(SIG_BLOCK);
  {
    py::gil_scoped_acquire gil;
    disarm_sigint();
  }
  return reply;
}

nl::json Interpreter::kernel_info_request_impl() {
  nl::json reply = xpyt::interpreter::kernel_info_request_impl();
  reply["debugger"] = false;
  reply["implementation"] = "cellgate-xpython";
  // xeus-python reports the Python it was built against (3.11.1 on Debian 12); say what runs.
  const std::string version = Py_GetVersion();
  reply["language_info"]["version"] = version.substr(0, version.find(' '));
  return reply;
}

}  // namespace cellgate::xpython
