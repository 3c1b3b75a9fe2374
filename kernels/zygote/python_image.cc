// SPDX-License-Identifier: BSD-3-Clause
// python_image: the fork server's embedded CPython — preloaded once, then entered by each kernel.
#include "kernels/zygote/python_image.h"

#include <Python.h>
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/zygote/helper_child.h"
#include "kernels/zygote/image_pages.h"
#include "kernels/zygote/prebuilt_shell.h"

namespace cellgate::zygote {
namespace {

constexpr const wchar_t* kPythonProgram = L"/usr/bin/python3";
constexpr const char* kEntryModule = "_cellgate_zygote";

// Defines the kernel's entry in __main__; the preload itself only imports modules.
// What `python3 -m ipykernel_launcher -f FILE` would do, minus the interpreter start:
//  - the environment is exactly the jail's (os.environ and the C environ); PYTHONUNBUFFERED and
//    PYTHONDONTWRITEBYTECODE take effect as at an interpreter start;
//  - SIGINT/SIGPIPE/SIGXFSZ as a fresh interpreter sets them (the jail reset every signal to default);
//  - the random state is the zygote's copy in every kernel: reseed numpy's global RandomState and
//    `random` (os.register_at_fork reseeds `random` too; explicit is cheap). str hashes keep the
//    zygote's secret (PYTHONHASHSEED cannot change after start): equal in all fork-server kernels;
//  - matplotlib was imported with Agg: the jail's MPLBACKEND (ipykernel's inline) applies from now;
//  - sys.path[0] is the working directory, as `-m` makes it; the user site dir is added if present;
//  - the shell built in the zygote is adopted when nothing configures it (prebuilt_shell.h).
constexpr const char* kKernelEntry = R"PY(
def _cellgate_kernel(argv, env):
    import os, random, signal, site, sys
    os.environ.clear()
    os.environ.update(env)
    # The two PYTHON* variables the spawner lets through (others make it start the kernel cold).
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    if env.get("PYTHONUNBUFFERED"):
        sys.stdout.reconfigure(write_through=True)
        sys.stderr.reconfigure(write_through=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    random.seed()
    np = sys.modules.get("numpy")
    if np is not None and "numpy.random" in sys.modules:
        # A whole MT19937 state from this kernel's urandom (19,937 bits; seed() draws 128 through a
        # SeedSequence): the same fresh, unpredictable global RandomState, for ~50 copy-on-write faults
        # of the image per start instead of ~120 (issue 26). The 3-tuple also drops a cached gaussian.
        np.random.set_state(("MT19937", np.frombuffer(os.urandom(624 * 4), dtype=np.uint32), 624))
    mpl = sys.modules.get("matplotlib")
    if mpl is not None:
        # ipykernel's default when the environment names none (it sets MPLBACKEND in init_gui_pylab,
        # which a cold kernel's later `import matplotlib` reads).
        mpl.rcParams["backend"] = env.get("MPLBACKEND") or "module://matplotlib_inline.backend_inline"
    site.USER_BASE = None
    site.USER_SITE = None
    user_site = site.getusersitepackages()
    if os.path.isdir(user_site):
        site.addsitedir(user_site)
    sys.path.insert(0, os.getcwd())
    import ipykernel_launcher
    sys.argv = [ipykernel_launcher.__file__] + list(argv[3:])
    from ipykernel.kernelapp import IPKernelApp
    app = IPKernelApp.instance()
    _cellgate_prepare(app, list(argv[3:]), _cellgate_shell)  # prebuilt_shell.cc
    app.initialize(list(argv[3:]))
    # matplotlib_inline registers its shell hooks (figures shown after each cell, plt.show) when it is
    # imported as the backend with a shell present: in a cold kernel at the first plot. Here it was
    # imported with the preload, before any shell, so run that registration now that the shell
    # exists; it does nothing unless the backend (after the startup files) is still the inline one,
    # and is skipped when a startup file's `%matplotlib` already configured it (as a cold kernel would).
    inline = sys.modules.get("matplotlib_inline.backend_inline")
    if inline is not None and getattr(inline.configure_inline_support, "current_backend", "unset") == "unset":
        inline._enable_matplotlib_integration()
    app.start()
)PY";

// After the preload, before the fork: what every kernel would otherwise copy for nothing.
//  - sys.modules' keys become fresh copies, allocated together (~40 pages instead of ~850): an
//    IPython shell starts with `_sys_modules_keys = set(sys.modules.keys())` (shellapp.py), a
//    reference to every module name, whose reference count write copied ~500 pages (2 MiB) of the
//    image per kernel. Equal strings, same order, same dict object.
//  - the type attribute cache is emptied last: each entry holds a reference to its attribute name,
//    so every entry a kernel replaces wrote the old name's reference count (~180 pages more).
constexpr const char* kFreeze = R"PY(
import gc, sys
gc.collect()
_fresh = {"".join((name, "")): module for name, module in sys.modules.items()}
sys.modules.clear()
sys.modules.update(_fresh)
del _fresh
gc.freeze()
sys.stdout.flush()
sys.stderr.flush()
sys._clear_type_cache()
del gc, sys
)PY";

void set_env(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

// Files the preload left open (IPython.utils.io keeps `devnull = open(os.devnull, "w")`). The jail
// closes every fd >= 3 before the kernel enters, and a Python file object whose fd number is reused
// would write into (and, when collected, close) an unrelated file: each such fd is reopened on
// /dev/null at the same number in the kernel. Only /dev/null is allowed (checked at start).
constexpr int kMaxPreloadFds = 16;
int g_devnull_fds[kMaxPreloadFds];
int g_devnull_count = 0;

std::string record_preloaded_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return "cannot list /proc/self/fd";
  std::string bad;
  const int own = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::atoi(e->d_name);
    if (fd < 3 || fd == own) continue;
    char target[256] = {};
    std::string link = "/proc/self/fd/" + std::string(e->d_name);
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0 && std::strcmp(target, "/dev/null") == 0 && g_devnull_count < kMaxPreloadFds) {
      g_devnull_fds[g_devnull_count++] = fd;
    } else {
      bad += " " + std::to_string(fd) + "->" + std::string(target);
    }
  }
  ::closedir(d);
  return bad.empty() ? "" : "the preload left files open:" + bad + " (only /dev/null is handled)";
}

constexpr int kTcacheCount = 7;  // glibc's default glibc.malloc.tcache_count

// The preload leaves free chunks scattered over the ~30 MiB malloc heap. After a fork, malloc reuses
// them first, and each reuse writes into (so copies) a page of the shared image: the helper's jail
// setup alone copied ~700 heap pages that way, pages its init and kernel then share with it only,
// which each kernel pays in full. Allocating every free chunk once, for good, makes later
// allocations — the helper's, init's, the kernel's — come from the top of the heap, fresh pages.
// Bounded: the tcache's chunks (at most 64 sizes x 7, < 0.5 MiB), then at most the free bytes the heap
// holds (under 1 MiB after the preload), in 32-byte pieces.
void plug_heap_holes() {
  // mallinfo2 counts the chunks parked in the per-thread cache (tcache: up to 7 per size up to
  // 1032 bytes) as in use: take them first, or the helper's first allocations reuse them, copying
  // the pages they are scattered over, which its init and kernel then share with it only (PSS per
  // kernel -0.45 MiB).
  for (size_t size = 24; size <= 1032; size += 16) {
    for (int i = 0; i < kTcacheCount; ++i) {
      if (::malloc(size) == nullptr) return;  // kept, as below
    }
  }
  for (int round = 0; round < 16; ++round) {
    struct mallinfo2 mi = ::mallinfo2();
    if (mi.fordblks <= mi.keepcost + 4096) return;
    const size_t pieces = (mi.fordblks - mi.keepcost) / 32 + 1;
    for (size_t i = 0; i < pieces; ++i) {
      if (::malloc(24) == nullptr) return;  // kept: the holes stay filled in every kernel
    }
  }
}

// pymalloc's arenas while huge pages are on (image_pages.h); lives as long as the process.
ArenaRegion* g_arenas = nullptr;

void install_arena_region() {
  g_arenas = new ArenaRegion();
  PyObjectArenaAllocator allocator{
      g_arenas, [](void* ctx, size_t size) { return static_cast<ArenaRegion*>(ctx)->allocate(size); },
      [](void* ctx, void* p, size_t size) { static_cast<ArenaRegion*>(ctx)->release(p, size); }};
  PyObject_SetArenaAllocator(&allocator);
}

// Last step of the image: nothing preloaded moves after this.
void image_into_huge_pages() {
  g_arenas->seal();
  // The server's own allocations (a request's strings) come from the top of the heap (plug_heap_holes),
  // and its writes there would split a huge page there on the first request: left in 4 KiB pages.
  const char* heap_top = static_cast<const char*>(::sbrk(0)) - ::mallinfo2().keepcost;
  CollapseResult r = collapse_anonymous_memory(heap_top);
  if (r.error != 0 && r.bytes == 0) {
    std::fprintf(stderr, "cellgate-zygote: image stays in 4 KiB pages (MADV_COLLAPSE: %s)\n", std::strerror(r.error));
    return;
  }
  std::fprintf(stderr, "cellgate-zygote: image in huge pages: %zu MiB (object arenas %zu MiB)%s%s\n", r.bytes >> 20,
               g_arenas->carved() >> 20, r.error != 0 ? "; some ranges not: " : "", r.error != 0 ? std::strerror(r.error) : "");
}

}  // namespace

// The kernel's own stack first, the data libraries after: objects are laid out in import order, and
// a kernel start touches (so copies the pages of) the standard library, traitlets, zmq, tornado,
// jupyter_client, IPython and ipykernel, not numpy or pandas; imported first they share fewer pages
// with objects no kernel start touches (a kernel's USS 16.6 -> 16.0 MiB).
std::vector<std::string> default_preload() {
  return {"asyncio", "json", "uuid", "hmac", "pickle", "decimal", "sqlite3", "psutil", "zmq", "zmq.eventloop.zmqstream",
          "tornado.ioloop", "jupyter_client.session", "jupyter_client.connect", "IPython", "IPython.core.interactiveshell",
          "IPython.core.completer", "ipykernel_launcher", "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell",
          "ipykernel.iostream", "ipykernel.heartbeat", "ipykernel.parentpoller", "ipykernel.comm", "ipykernel.debugger",
          "numpy", "numpy.random", "pandas", "matplotlib", "matplotlib.pyplot", "matplotlib.backends.backend_agg",
          "matplotlib_inline.backend_inline", "jedi", "parso", "pygments", "pygments.lexers.python",
          "pygments.formatters.html"};
}

std::string start_python(const std::vector<std::string>& modules, const std::string& mpl_dir, bool huge_pages) {
  // Nothing of the caller's environment reaches the shared image; kernels get theirs at entry.
  ::clearenv();
  set_env("PATH", "/usr/local/bin:/usr/bin:/bin");
  set_env("LANG", "C.UTF-8");
  set_env("HOME", "/workspace");
  for (const char* v : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                        "NUMEXPR_MAX_THREADS", "VECLIB_MAXIMUM_THREADS"})
    set_env(v, "1");
  set_env("MPLBACKEND", "Agg");
  struct stat st {};
  if (!mpl_dir.empty() && ::stat(mpl_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) set_env("MPLCONFIGDIR", mpl_dir);

  // Before the interpreter makes its first arena.
  if (huge_pages) install_arena_region();
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.parse_argv = 0;
  config.install_signal_handlers = 1;
  config.use_environment = 0;       // no PYTHON* variables of whoever started us
  config.user_site_directory = 0;   // kernels add their own at entry
  config.write_bytecode = 0;        // root must not write .pyc files under /usr
  PyStatus status = PyConfig_SetString(&config, &config.program_name, kPythonProgram);
  if (!PyStatus_Exception(status)) status = PyConfig_SetString(&config, &config.executable, kPythonProgram);
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) return std::string("python: ") + (status.err_msg ? status.err_msg : "init failed");

  // In a module of its own: IPython gives the user a fresh __main__, but nothing of ours should show.
  PyObject* globals = PyModule_GetDict(PyImport_AddModule(kEntryModule));
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* defined = PyRun_String(kKernelEntry, Py_file_input, globals, globals);
  if (defined == nullptr) {
    PyErr_Print();
    return "python: cannot define the kernel entry";
  }
  Py_DECREF(defined);
  std::string failed;
  for (const auto& name : modules) {
    PyObject* mod = PyImport_ImportModule(name.c_str());
    if (mod == nullptr) {
      PyErr_Print();
      failed += (failed.empty() ? "" : ",") + name;
      continue;
    }
    Py_DECREF(mod);
  }
  if (!failed.empty()) std::fprintf(stderr, "cellgate-zygote: not preloaded (import failed): %s\n", failed.c_str());
  if (std::string err = define_prebuilt_shell(globals); !err.empty()) return err;
  // Everything preloaded is permanent: gc.freeze() keeps collections in kernels from writing GC
  // headers into the shared pages (copy-on-write erosion).
  if (PyRun_SimpleString(kFreeze) != 0) return "python: gc.freeze failed";
  std::fflush(nullptr);
  std::string fds = record_preloaded_fds();
  plug_heap_holes();
  if (huge_pages) image_into_huge_pages();
  return fds;
}

int thread_count() {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n;
}

void before_fork() {
  // Only C runs while serving, on the process's only thread, so no lock PyOS_BeforeFork would take
  // (the import lock; logging's module lock, its one before-fork hook) can be held. It and
  // PyOS_AfterFork_Parent are not called: they would write those locks and the hooks' objects on
  // every request, which split 5 of the image's 2 MiB pages in the zygote on the first one. The kernel
  // still runs PyOS_AfterFork_Child, which reinitializes both locks.
  std::fflush(nullptr);
}

void enter_kernel(const isolation::child::ChildPlan& plan) noexcept {
  // An execve by uid 1000 would have made the process dumpable again (the uid change in the jail's
  // init cleared it): its /proc/self files are its own, as in a cold kernel.
  ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  show_kernel_title();
  for (int i = 0; i < g_devnull_count; ++i) {
    int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd >= 0 && fd != g_devnull_fds[i]) {
      ::dup3(fd, g_devnull_fds[i], O_CLOEXEC);
      ::close(fd);
    }
  }
  PyOS_AfterFork_Child();
  PyObject* argv = PyList_New(0);
  for (char* const* a = plan.argv; a != nullptr && *a != nullptr; ++a) {
    PyObject* s = PyUnicode_DecodeFSDefault(*a);
    if (s != nullptr) PyList_Append(argv, s);
    Py_XDECREF(s);
  }
  PyObject* env = PyDict_New();
  for (char* const* e = plan.envp; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    PyObject* k = PyUnicode_DecodeFSDefaultAndSize(*e, eq - *e);
    PyObject* v = PyUnicode_DecodeFSDefault(eq + 1);
    if (k != nullptr && v != nullptr) PyDict_SetItem(env, k, v);
    Py_XDECREF(k);
    Py_XDECREF(v);
  }
  PyObject* entry = PyObject_GetAttrString(PyImport_AddModule(kEntryModule), "_cellgate_kernel");
  PyObject* result = entry != nullptr ? PyObject_CallFunctionObjArgs(entry, argv, env, nullptr) : nullptr;
  if (result == nullptr) {
    PyErr_Print();  // SystemExit(n) exits here with n, as the interpreter would
    Py_Exit(1);
  }
  Py_Exit(0);
}

}  // namespace cellgate::zygote
