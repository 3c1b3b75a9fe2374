// SPDX-License-Identifier: BSD-3-Clause
// python_fixups: Python-level corrections to xeus-python 0.14.3, applied before the interpreter starts.
#include "kernels/xpython/python_fixups.h"

#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

namespace cellgate::xpython {

namespace {

// xeus-python's C++ side reads `shell.last_error = [ename, evalue, traceback]` after each
// execution (xeus_python_shell/shell.py, XPythonShell._showtraceback). Patching the class,
// not an instance, covers the shell the interpreter creates later.
constexpr const char* kShim = R"PY(
import sys
import xeus_python_shell.shell as _xps

def _cellgate_showtraceback(self, etype, evalue, stb):
    self.last_error = [getattr(etype, "__name__", str(etype)), str(evalue), stb]

_xps.XPythonShell._showtraceback = _cellgate_showtraceback
sys.argv = ["cellgate-xpython"]
if not sys.path or sys.path[0] != "":
    sys.path.insert(0, "")
del _xps, _cellgate_showtraceback
)PY";

}  // namespace

void apply_python_fixups() {
  namespace py = pybind11;
  py::dict scope;
  scope["__builtins__"] = py::module_::import("builtins");
  py::exec(kShim, scope);
}

}  // namespace cellgate::xpython
