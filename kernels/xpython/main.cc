// SPDX-License-Identifier: BSD-3-Clause
// cellgate-xpython: a native Python kernel on Debian's xeus 2.4 and xeus-python 0.14 libraries.
//
// Our own small main instead of upstream's, for three reasons (measured, see
// shared/reference/jail-on-this-machine.md §6 and kernels/xpython/README.md):
//  - Python's home comes from /usr/bin/python3, not from this binary's location: xeus-python's
//    set_pythonhome() derives it from dirname(dirname(argv[0])), which breaks anywhere but /usr/bin;
//  - upstream installs xpyt::sigkill_handler, so SIGINT kills the kernel. Here SIGINT raises
//    KeyboardInterrupt while a cell runs and is ignored while idle (interpreter.h), so the
//    kernelspec says interrupt_mode signal;
//  - error names are normalised (python_fixups.h).
#include <Python.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include <pybind11/embed.h>
#include <xeus/xeus_context.hpp>
#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <xeus/xserver_zmq.hpp>
#include <xeus-python/xinterpreter.hpp>
#include <zmq.hpp>

#include "kernels/xpython/interpreter.h"
#include "kernels/xpython/ipc_dir.h"
#include "kernels/xpython/python_fixups.h"

namespace {

constexpr const char* kUsage =
    "usage: cellgate-xpython -f CONNECTION_FILE\n\n"
    "A Jupyter kernel for Python 3 (xeus-python 0.14 on /usr/bin/python3).\n"
    "Interrupt it with SIGINT (KeyboardInterrupt); interrupt_request is acknowledged only.\n";

// The interpreter Python's paths are derived from: sys.prefix /usr, the Debian stdlib and
// dist-packages, sys.executable for subprocesses and multiprocessing.
constexpr const wchar_t* kPythonProgram = L"/usr/bin/python3";

struct Args {
  std::string connection_file;
};

// Returns 0 and fills `out`, or the exit status: 0 after --help/--version, 2 on bad usage.
int parse_args(int argc, char** argv, Args& out, bool& done) {
  done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      done = true;
      return 0;
    }
    if (a == "--version") {
      std::printf("cellgate-xpython (xeus-python %s, Python %s)\n", XPYT_VERSION, PY_VERSION);
      done = true;
      return 0;
    }
    if ((a == "-f" || a == "--connection-file") && i + 1 < argc) {
      out.connection_file = argv[++i];
    } else if (a.rfind("--connection-file=", 0) == 0) {
      out.connection_file = a.substr(std::strlen("--connection-file="));
    } else {
      std::fprintf(stderr, "cellgate-xpython: unexpected argument \"%s\" (see --help)\n", a.c_str());
      done = true;
      return 2;
    }
  }
  if (out.connection_file.empty()) {
    std::fputs("cellgate-xpython: -f CONNECTION_FILE is required\n", stderr);
    done = true;
    return 2;
  }
  return 0;
}

// Fails with one line if Python cannot be configured (an out-of-memory PyStatus only).
void init_config(PyConfig& config) {
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;               // our argv is not Python's command line
  config.install_signal_handlers = 1;  // SIGINT -> KeyboardInterrupt in the main thread
  PyStatus st = PyConfig_SetString(&config, &config.program_name, kPythonProgram);
  if (PyStatus_Exception(st)) throw std::runtime_error("PyConfig program_name");
}

// Runs user atexit handlers (the GIL is free again once the server stopped), flushes, _exit(0).
[[noreturn]] void run_atexit_and_exit() {
  {
    pybind11::gil_scoped_acquire gil;
    try {
      pybind11::module_::import("atexit").attr("_run_exitfuncs")();
      pybind11::module_::import("sys").attr("stdout").attr("flush")();
    } catch (const pybind11::error_already_set& e) {
      std::fprintf(stderr, "cellgate-xpython: atexit: %s\n", e.what());
    }
  }
  std::fflush(nullptr);
  std::_Exit(0);
}

// Runs the kernel until shutdown_request. Needs the interpreter initialised and the GIL held;
// returns the exit status. Python errors are printed here, while the interpreter still exists
// (pybind11's what() takes the GIL, which must not outlive Py_Finalize).
int run_kernel(const xeus::xconfiguration& config) {
  try {
    cellgate::xpython::apply_python_fixups();
    // Before any xeus or zmq thread exists, so that they all inherit a blocked SIGINT.
    cellgate::xpython::Interpreter::block_sigint_for_server();
    // The kernel owns the interpreter; xkernel destroys the context last (xkernel.hpp).
    auto interpreter = std::make_unique<cellgate::xpython::Interpreter>();
    std::unique_ptr<xeus::xkernel> kernel;
    {
      xeus::xconfiguration bind_config = config;
      cellgate::xpython::ScopedIpcDir ipc_dir(bind_config);  // the kernel binds in its constructor
      kernel = std::make_unique<xeus::xkernel>(bind_config, xeus::get_user_name(),
                                               xeus::make_context<zmq::context_t>(), std::move(interpreter),
                                               xeus::make_xserver_zmq);
    }
    kernel->start();
    // shutdown_request was answered and the server stopped. Leave without destroying the kernel:
    // Python's atexit handlers run as they would under ipykernel, then _exit. (xeus 2.4.1's
    // teardown terminates the process if a server thread is still polling a socket it closes.)
    run_atexit_and_exit();
  } catch (const pybind11::error_already_set& e) {
    std::fprintf(stderr, "cellgate-xpython: python: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  bool done = false;
  if (int rc = parse_args(argc, argv, args, done); done) return rc;
  try {
    // Fails fast, before Python starts, on a missing or malformed file (xeus throws).
    const xeus::xconfiguration config = xeus::load_configuration(args.connection_file);
    PyConfig py_config;
    init_config(py_config);
    const char* const py_argv[] = {"cellgate-xpython"};
    pybind11::scoped_interpreter python(&py_config, 1, py_argv, false);
    return run_kernel(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cellgate-xpython: %s\n", e.what());
    return 1;
  }
}
