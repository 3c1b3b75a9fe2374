// SPDX-License-Identifier: BSD-3-Clause
// python_image: the fork server's embedded CPython — preloaded once, then entered by each kernel.
#pragma once

#include <string>
#include <vector>

#include "isolation/child/run_child.h"

namespace cellgate::zygote {

// Modules imported before serving (ipykernel and what its start imports, the usual data libraries).
std::vector<std::string> default_preload();

// Starts the interpreter (Debian's /usr/bin/python3 paths, no PYTHON* variables, no user site) in a
// clean environment that keeps native libraries single-threaded (OMP/OpenBLAS/MKL/numexpr = 1 thread,
// MPLBACKEND=Agg, MPLCONFIGDIR=mpl_dir when it exists), imports `modules`, builds the shell kernels adopt
// (prebuilt_shell.h), then gc.collect() and gc.freeze() so kernels share the preloaded objects. Runs no user code, creates no thread and no
// ZeroMQ context. Keeps the GIL for good: the server is this one thread. With `huge_pages`, the image
// is laid out for and then put into 2 MiB pages (image_pages.h). Returns "" or why it failed.
std::string start_python(const std::vector<std::string>& modules, const std::string& mpl_dir, bool huge_pages);

// The number of threads of this process (from /proc/self/task); forking needs exactly 1.
int thread_count();

// Called before the server's fork: flushes stdio. The child becomes a helper that never runs Python;
// only its kernel grandchild re-enters the interpreter, through enter_kernel (PyOS_AfterFork_Child).
void before_fork();

// The jail's enter hook (child::ChildPlan::enter), run in the kernel process after the full lockdown
// (uid 1000, no capabilities, no_new_privs, seccomp): PyOS_AfterFork_Child, the jail's environment,
// fresh random state (numpy's global RNG and `random`), Python's usual signal dispositions, then
// IPKernelApp.initialize(["-f", connection_file]) (adopting the prebuilt shell when nothing configures
// one) and start(). Exits the process; never returns.
[[noreturn]] void enter_kernel(const isolation::child::ChildPlan& plan) noexcept;

}  // namespace cellgate::zygote
