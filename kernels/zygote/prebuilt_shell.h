// SPDX-License-Identifier: BSD-3-Clause
// prebuilt_shell: the kernels' IPython shell, built once in the zygote and adopted by each kernel.
#pragma once

#include <string>

// CPython's own declaration (Python.h), so that this header does not pull in Python.h.
typedef struct _object PyObject;

namespace cellgate::zygote {

// Defines, in the entry module whose globals dict is given:
//  - `_cellgate_shell`: an ipykernel ZMQInteractiveShell built here, after the preload and before
//    gc.freeze(), as IPythonKernel builds it for a kernel without configuration, but with no history
//    file and no history thread; or None when it could not be built (the reason is on stderr) or
//    ipykernel.zmqshell was not preloaded. Kernels then build their own, as a cold kernel does.
//  - `_cellgate_prepare(app, argv, shell)`, which the kernel entry calls before
//    IPKernelApp.initialize(argv): it parses the exactly-`-f FILE` command line without traitlets'
//    argparse machinery, and makes the kernel's `ZMQInteractiveShell.instance(...)` adopt `shell`
//    when nothing configures it (the app's config holds only the connection file: no config file, no
//    other option). Adoption redoes everything a shell takes from its kernel and its environment (the
//    IPython dir, profile, history file and thread, cwd, home, $TERM and friends, sys hooks,
//    __main__, atexit); with any configuration the kernel builds its own shell instead.
// Why: building the shell is ~40% of a forked kernel's start (magics, completer, prefilter,
// traitlets: ~15 ms of CPU); built once, its objects are shared by every kernel (copy-on-write).
// Runs no user code: the shell is built with an empty configuration in a directory removed after.
// Returns "" or why the code could not even be defined.
std::string define_prebuilt_shell(PyObject* globals);

}  // namespace cellgate::zygote
