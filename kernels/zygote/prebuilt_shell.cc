// SPDX-License-Identifier: BSD-3-Clause
// prebuilt_shell: the kernels' IPython shell, built once in the zygote and adopted by each kernel.
#include <Python.h>

#include "kernels/zygote/prebuilt_shell.h"

#include <cstdio>

namespace cellgate::zygote {
namespace {

// IPython 8 / ipykernel 6 (Debian 12). The shell is what IPythonKernel.__init__ would build with
// `ZMQInteractiveShell.instance(parent=kernel, profile_dir=..., user_module=None, user_ns=None,
// kernel=kernel, compiler_class=XCachingCompiler)` and an empty config, except for the parts that
// belong to one kernel, which adoption redoes in InteractiveShell.__init__'s order:
//  - ipython_dir and profile_dir: from the kernel's environment ($IPYTHONDIR, $HOME) and its app;
//  - starting_dir (os.getcwd()), home_dir and the Logger (~), the pickleshare db (profile/db);
//  - init_environment: ZMQInteractiveShell sets TERM, CLICOLOR, PAGER, GIT_PAGER in os.environ,
//    which the kernel entry replaced with the jail's environment;
//  - save_sys_module_state and init_sys_modules: the kernel's sys.stdout/stderr are ipykernel's
//    OutStreams by then (init_io runs before init_kernel), and sys.modules['__main__'] becomes the
//    shell's user module (the zygote keeps its own __main__);
//  - the history: a HistoryManager opens its sqlite file and starts its saving thread when built,
//    neither of which may happen in the zygote (one thread only, no files of kernels). The zygote's
//    shell has a disabled one; the kernel gets a real one, and the user namespace's _ih/_oh/_dh/In/Out
//    are re-pointed at it (init_user_ns);
//  - stdin_encoding, sys_excepthook (IPKernelApp's excepthook by then), the atexit registration
//    (unregistered in the zygote, whose exit must not run a kernel's atexit operations).
// Nothing else in the construction reads the environment, the cwd, the pid or a stream
// (ipykernel's XCachingCompiler derives its temp dir from the pid per call).
constexpr const char* kCode = R"PY(
def _cellgate_prebuild_shell():
    import atexit, os, shutil, sys, tempfile
    if "ipykernel.zmqshell" not in sys.modules:
        return None
    from traitlets.config import Config
    from IPython.core.history import HistoryManager
    from IPython.core.profiledir import ProfileDir
    from ipykernel.compiler import XCachingCompiler
    from ipykernel.zmqshell import ZMQInteractiveShell
    assert "init_history" not in ZMQInteractiveShell.__dict__
    env, main = dict(os.environ), sys.modules["__main__"]
    home = tempfile.mkdtemp(prefix="cellgate-zygote-shell-", dir="/tmp")

    def history_without_file(self):
        self.history_manager = HistoryManager(shell=self, parent=self,
                                              config=Config({"HistoryManager": {"enabled": False}}))
        self.configurables.append(self.history_manager)

    ZMQInteractiveShell.init_history = history_without_file
    try:
        shell = ZMQInteractiveShell(ipython_dir=home, compiler_class=XCachingCompiler,
                                    profile_dir=ProfileDir.create_profile_dir(os.path.join(home, "profile_default")))
    finally:
        del ZMQInteractiveShell.init_history
        sys.modules["__main__"] = main
        os.environ.clear()
        os.environ.update(env)
        shutil.rmtree(home, ignore_errors=True)
    atexit.unregister(shell.atexit_operations)
    # The display formatters (text/plain, html, png...) are a lazy trait default: a cold kernel builds
    # them at its first display; every kernel here at its start (the inline backend's figure formats).
    shell.display_formatter.formatters
    return shell


def _cellgate_prepare(app, argv, shell):
    import atexit, os, sys
    from traitlets.config import Config
    from IPython.core.history import HistoryManager
    from ipykernel.zmqshell import ZMQInteractiveShell
    from pickleshare import PickleShareDB

    if len(argv) == 2 and argv[0] == "-f":
        def parse_command_line(argv=None):
            # What traitlets' KVArgParseConfigLoader makes of exactly `-f FILE` (ipykernel's alias
            # f = IPKernelApp.connection_file), without an argparse parser for every alias and flag
            # of every configurable class (~7 ms per start).
            app.argv = list(argv)
            app.cli_config = Config({"IPKernelApp": {"connection_file": argv[1]}})
            app.update_config(app.cli_config)
            app.extra_args = []
        app.parse_command_line = parse_command_line
    if shell is None or "instance" in ZMQInteractiveShell.__dict__:
        return

    def instance(cls, *args, **kw):
        del ZMQInteractiveShell.instance
        parent = kw.get("parent")
        config = getattr(parent, "config", None)
        if (cls is not ZMQInteractiveShell or args or config is None
                or set(config) != {"IPKernelApp"} or set(config["IPKernelApp"]) != {"connection_file"}
                or kw.get("user_module") is not None or kw.get("user_ns") is not None
                or kw.get("compiler_class") is not type(shell.compile)):
            return cls.instance(*args, **kw)
        shell.parent = parent
        shell.config = config
        shell.log = parent.log
        shell.kernel = kw.get("kernel")
        shell.init_ipython_dir(None)
        shell.init_profile_dir(kw.get("profile_dir"))
        shell.starting_dir = os.getcwd()
        shell.init_environment()
        shell.save_sys_module_state()
        shell.init_sys_modules()
        shell.db = PickleShareDB(os.path.join(shell.profile_dir.location, "db"))
        zygote_history = shell.history_manager
        shell.history_manager = HistoryManager(shell=shell, parent=shell)
        shell.configurables[shell.configurables.index(zygote_history)] = shell.history_manager
        shell.init_encoding()
        shell.init_pushd_popd_magic()
        shell.init_user_ns()
        shell.init_logger()
        shell.sys_excepthook = sys.excepthook
        atexit.register(shell.atexit_operations)
        for c in cls._walk_mro():
            c._instance = shell
        return shell

    ZMQInteractiveShell.instance = classmethod(instance)


try:
    _cellgate_shell = _cellgate_prebuild_shell()
    # IPython globs the profile's startup dir for *.py and *.ipy at every start: fnmatch compiles each
    # pattern once per process (lru_cache, then re's cache), so compile them here, for all kernels.
    import fnmatch
    fnmatch.filter([], "*.py")
    fnmatch.filter([], "*.ipy")
    del fnmatch
except Exception as e:
    import sys
    print("cellgate-zygote: no prebuilt shell (kernels build their own): %s: %s" % (type(e).__name__, e),
          file=sys.stderr)
    _cellgate_shell = None
)PY";

}  // namespace

std::string define_prebuilt_shell(PyObject* globals) {
  PyObject* done = PyRun_String(kCode, Py_file_input, globals, globals);
  if (done == nullptr) {
    PyErr_Print();
    return "python: cannot define the prebuilt shell";
  }
  Py_DECREF(done);
  return "";
}

}  // namespace cellgate::zygote
