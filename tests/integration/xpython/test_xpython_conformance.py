# SPDX-License-Identifier: BSD-3-Clause
# xpython conformance: jupyter_kernel_test's KernelTests against cellgate-xpython, bare or jailed.
#
# CELLGATE_XPYTHON_MODE=bare: jupyter_client starts the build tree's kernelspec
#   (JUPYTER_PATH=$CELLGATE_BUILD_DIR/share/jupyter), over tcp on 127.0.0.1.
# CELLGATE_XPYTHON_MODE=jailed: a temporary kernelspec wraps the installed kernel
#   (scripts/install-xpython.sh) in $CELLGATE_JAIL, over ipc in a short runtime dir: the jail's
#   network namespace has only loopback, so the host cannot reach tcp ports inside it.
# Exit 77 (ctest SKIP_RETURN_CODE) when jailed mode cannot run here (not root).
import filecmp
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

import jupyter_kernel_test
from jupyter_client.manager import KernelManager

MODE = os.environ.get("CELLGATE_XPYTHON_MODE", "bare")
BUILD = os.environ.get("CELLGATE_BUILD_DIR", "")
JAIL = os.environ.get("CELLGATE_JAIL", "")
INSTALLED = os.environ.get("CELLGATE_XPYTHON_INSTALLED", "/usr/local/lib/cellgate/cellgate-xpython")
TIMEOUT = 30  # seconds, for every single wait below; no assertion is about speed


def _jailed_kernelspec(root, runtime_dir):
    """Writes <root>/kernels/xpython/kernel.json running the installed kernel in cellgate-jail."""
    spec_dir = os.path.join(root, "kernels", "xpython")
    os.makedirs(spec_dir)
    spec = {
        "argv": [JAIL, "--connection-file", "{connection_file}", "--",
                 INSTALLED, "-f", "{connection_file}"],
        "display_name": "Python 3 (xeus-python, jailed)",
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }
    with open(os.path.join(spec_dir, "kernel.json"), "w") as f:
        json.dump(spec, f)


class XPythonKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "xpython"
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "print?"
    code_generate_error = "raise Exception('cellgate')"
    code_execute_result = [{"code": "1+2+3", "result": "6"}, {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"}]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))", "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))", "mime": "text/latex"},
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.mkdtemp(prefix="cgx", dir="/tmp")  # short: ipc paths must stay < 108 bytes
        runtime = os.path.join(cls._tmp, "rt")
        os.mkdir(runtime)
        os.environ["JUPYTER_RUNTIME_DIR"] = runtime
        if MODE == "jailed":
            # cellgate-jail hands this private (0700, not world-writable) dir to the jailed kernel's uid.
            _jailed_kernelspec(cls._tmp, runtime)
            os.environ["JUPYTER_PATH"] = cls._tmp
            # jupyter_client's default ipc "ip" is relative to the kernel's cwd: name it.
            conn = {"transport": "ipc", "connection_file": os.path.join(runtime, "k.json"),
                    "ip": os.path.join(runtime, "k")}
        else:
            os.environ["JUPYTER_PATH"] = os.path.join(BUILD, "share", "jupyter")
            conn = {"transport": "tcp"}
        cls.km = KernelManager(kernel_name=cls.kernel_name, **conn)
        cls.km.start_kernel()
        cls.kc = cls.km.client()
        cls.kc.start_channels()
        try:
            cls.kc.wait_for_ready(timeout=60)
        except RuntimeError:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel()
        shutil.rmtree(cls._tmp, ignore_errors=True)

    # cellgate's own checks, beyond jupyter_kernel_test.

    def _run(self, code):
        self.flush_channels()
        reply, outputs = self.execute_helper(code=code, timeout=TIMEOUT)
        return reply["content"], outputs

    def test_cellgate_ename_is_bare_class_name(self):
        content, outputs = self._run("1/0")
        self.assertEqual(content["status"], "error")
        self.assertEqual(content["ename"], "ZeroDivisionError")
        errors = [m for m in outputs if m["msg_type"] == "error"]
        self.assertEqual([m["content"]["ename"] for m in errors], ["ZeroDivisionError"])

    def test_cellgate_kernel_info(self):
        self.flush_channels()
        reply = self.kc.kernel_info(reply=True, timeout=TIMEOUT)["content"]
        self.assertEqual(reply["implementation"], "cellgate-xpython")
        self.assertFalse(reply["debugger"])
        self.assertEqual(reply["language_info"]["version"], "%d.%d.%d" % sys.version_info[:3])

    def test_cellgate_python_is_debians(self):
        content, outputs = self._run("import sys, numpy; print(sys.executable, sys.prefix, sys.path[0] == '')")
        self.assertEqual(content["status"], "ok")
        text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
        self.assertEqual(text.split(), ["/usr/bin/python3", "/usr", "True"])

    def test_cellgate_where_it_runs(self):
        content, outputs = self._run("import os; print(os.getuid(), os.getpid())")
        self.assertEqual(content["status"], "ok")
        uid, pid = ("".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")).split()
        if MODE == "jailed":
            self.assertEqual((uid, pid), ("1000", "2"))  # the jail's sandbox user; the jail init is pid 1
        else:
            self.assertEqual(int(pid), self.km.provisioner.process.pid)

    def test_cellgate_sigint_interrupts_running_code(self):
        self.flush_channels()
        msg_id = self.kc.execute("import time\nfor _ in range(600): time.sleep(0.1)")
        deadline = time.monotonic() + TIMEOUT
        while True:  # wait until the cell is really running
            msg = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
                break
            self.assertLess(time.monotonic(), deadline)
        time.sleep(0.3)
        self.km.interrupt_kernel()  # interrupt_mode signal: SIGINT to the kernel's process group
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        content, _ = self._run("40 + 2")
        self.assertEqual(content["status"], "ok")

    def test_cellgate_sigint_while_idle_is_ignored(self):
        # xeus 2.4.1's poll loop does not retry EINTR: before interpreter.h's fix an idle SIGINT
        # ended the kernel. It must live on, and the next cell must not see a stale interrupt.
        content, _ = self._run("x = 41")
        self.assertEqual(content["status"], "ok")
        for _ in range(3):
            self.km.interrupt_kernel()
            time.sleep(0.2)
        self.assertTrue(self.km.is_alive())
        content, outputs = self._run("import time; time.sleep(0.2); x + 1")
        self.assertEqual(content["status"], "ok")
        results = [m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"]
        self.assertEqual(results, ["42"])

    @unittest.skip("xeus 2.4.1's history manager answers output=True with [session, line, input, output] "
                   "instead of [session, line, [input, output]] (fails the msgspec); "
                   "test_cellgate_history covers output=False")
    def test_history(self):
        pass

    def test_cellgate_history(self):
        codes = [s["code"] for s in self.code_execute_result]
        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="tail", n=len(codes))
        self.assertEqual([h[2] for h in reply["content"]["history"]], codes)
        reply = self.history_helper(codes, output=False, raw=True, hist_access_type="search",
                                    pattern=self.code_history_pattern)
        self.assertIn("1+2+3", [h[2] for h in reply["content"]["history"]])

    @unittest.skip("xeus 2.4.1 acknowledges interrupt_request but does not interrupt running code (no "
                   "interpreter hook; with one poll loop it is even read only after the cell ends); the "
                   "kernelspec says interrupt_mode signal, so clients send SIGINT instead")
    def test_cellgate_interrupt_request_message(self):
        pass


def _precheck():
    if MODE == "jailed":
        if os.geteuid() != 0:
            print("skipped: the jailed run needs root (cellgate-jail's user namespace and cgroups)")
            sys.exit(77)
        built = os.path.join(BUILD, "bin", "cellgate-xpython")
        if not os.path.exists(INSTALLED) or not filecmp.cmp(built, INSTALLED, shallow=False):
            print(f"{INSTALLED} is missing or differs from {built}: run scripts/install-xpython.sh {BUILD}")
            sys.exit(1)
    elif MODE != "bare":
        print(f"CELLGATE_XPYTHON_MODE must be bare or jailed, not {MODE!r}")
        sys.exit(2)


if __name__ == "__main__":
    _precheck()
    unittest.main(verbosity=2)
