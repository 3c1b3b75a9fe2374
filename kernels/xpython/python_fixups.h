// SPDX-License-Identifier: BSD-3-Clause
// python_fixups: Python-level corrections to xeus-python 0.14.3, applied before the interpreter starts.
#pragma once

namespace cellgate::xpython {

// Runs a small Python shim in the embedded interpreter. Needs an initialised interpreter and the
// GIL (call it before constructing xpyt::interpreter). What it changes, and why:
//  - XPythonShell._showtraceback stores `etype.__name__` as ename (0.14.3 stores str(etype), so
//    error replies said "<class 'ZeroDivisionError'>" where ipykernel says "ZeroDivisionError");
//  - sys.argv = ["cellgate-xpython"], so IPython's app does not parse our -f (it warned
//    "Unrecognized alias: 'f'");
//  - '' first on sys.path, as ipykernel does, so modules next to the notebook import.
// Throws pybind11::error_already_set if the shim fails (xeus_python_shell missing, say).
void apply_python_fixups();

}  // namespace cellgate::xpython
