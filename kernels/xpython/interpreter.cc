// SPDX-License-Identifier: BSD-3-Clause
// interpreter: xeus-python's interpreter with SIGINT armed only during execution, and our kernel_info.
#include <Python.h>  // first, as the Python C API asks

#include "kernels/xpython/interpreter.h"

#include <pthread.h>
#include <signal.h>

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

}  // namespace

void Interpreter::block_sigint_for_server() {
  disarm_sigint();
  set_sigint_mask(SIG_BLOCK);
}

nl::json Interpreter::execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                           bool store_history, nl::json user_expressions, bool allow_stdin) {
  {
    py::gil_scoped_acquire gil;
    py::module_ signal = py::module_::import("signal");
    signal.attr("signal")(SIGINT, signal.attr("default_int_handler"));
  }
  set_sigint_mask(SIG_UNBLOCK);
  nl::json reply = xpyt::interpreter::execute_request_impl(execution_counter, code, silent, store_history,
                                                           std::move(user_expressions), allow_stdin);
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
