# SPDX-License-Identifier: BSD-3-Clause
# kernel_conformance_test: a jailed ipykernel (kernelspec argv through cellgate-jail, transport ipc)
# passes Debian's jupyter_kernel_test. Run with `python3 -m unittest kernel_conformance_test`.
import time
import unittest

import jupyter_kernel_test

from jailed_kernel import JailedKernel, require_or_skip

JAIL = require_or_skip()


class JailedIPyKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "cellgate-jailed-python3"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise ValueError('inside the jail')"
    code_execute_result = [{"code": "1+2+3", "result": "6"}, {"code": "[n*n for n in range(4)]", "result": "[0, 1, 4, 9]"}]
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
        cls.jailed = JailedKernel(JAIL)
        try:
            cls.km, cls.kc = cls.jailed.start()
        except BaseException:
            cls.jailed.stop()  # tearDownClass does not run when setUpClass fails
            raise

    @classmethod
    def tearDownClass(cls):
        helper = cls.jailed.helper_pid()
        cls.jailed.stop()
        if helper is not None:
            problems = cls.jailed.leftovers(helper)
            assert not problems, f"left behind after shutdown: {problems}"

    def test_cellgate_runs_jailed(self):
        self.flush_channels()
        reply, output = self.execute_helper(
            "import os, socket, pwd; print(pwd.getpwuid(os.getuid()).pw_name, socket.gethostname(), os.getcwd())")
        self.assertEqual(reply["content"]["status"], "ok")
        text = "".join(m["content"].get("text", "") for m in output if m["msg_type"] == "stream")
        self.assertEqual(text.split(), ["sandbox", "sandbox", "/workspace"])

    def test_cellgate_interrupt(self):
        """interrupt_mode signal: SIGINT to cellgate-jail reaches the kernel as KeyboardInterrupt."""
        self.flush_channels()
        msg_id = self.kc.execute("import time; print('started', flush=True); time.sleep(60)")
        # Interrupt only once user code runs: a SIGINT between execute_input and the cell's start
        # lands in ipykernel's event loop ("KeyboardInterrupt caught in kernel") and the request
        # never gets a reply - an ipykernel race, not the jail's.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = self.kc.get_iopub_msg(timeout=60)
            if msg["msg_type"] == "stream" and "started" in msg["content"]["text"] \
                    and msg["parent_header"].get("msg_id") == msg_id:
                break
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=30)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        # ipykernel aborts requests that arrive right after an error (stop_on_error): retry those.
        for _ in range(20):
            self.flush_channels()
            reply = self.kc.execute_interactive("print('alive')", timeout=30)
            if reply["content"]["status"] != "aborted":
                break
            time.sleep(0.25)
        self.assertEqual(reply["content"]["status"], "ok")

if __name__ == "__main__":
    unittest.main()
