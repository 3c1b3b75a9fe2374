# SPDX-License-Identifier: BSD-3-Clause
# zygote_conformance_test: an ipykernel forked by cellgate-zygote (and jailed by its helper) passes
# Debian's jupyter_kernel_test, plus the cold jailed kernel's own checks (kernel_conformance_test).
# Run with `python3 -m unittest zygote_conformance_test` (CELLGATE_JAIL, CELLGATE_ZYGOTE; root).
import os
import signal
import unittest

import kernel_conformance_test as cold
import zygote_kernel as zk

JAIL, ZYGOTE = zk.require_or_skip()


class _HelperSignals:
    """What the inherited tests use of a KernelManager: interrupt = SIGINT to the jail helper."""

    def __init__(self, kernel):
        self.kernel = kernel

    def interrupt_kernel(self):
        os.kill(self.kernel.helper, signal.SIGINT)


class ZygoteIPyKernelTests(cold.JailedIPyKernelTests):
    @classmethod
    def setUpClass(cls):
        cls.zygote = zk.ZygoteServer(ZYGOTE, "conformance")
        try:
            cls.kernel = zk.Kernel(JAIL, cls.zygote)
        except BaseException:
            cls.zygote.stop()
            raise
        cls.kc = cls.kernel.kc
        cls.km = _HelperSignals(cls.kernel)

    @classmethod
    def tearDownClass(cls):
        cls.kernel.stop()
        cls.zygote.stop()

    # A restart starts the kernel cold (the gateway's job; JailedIPyKernelTests covers it): this
    # harness forks one kernel and has none.
    test_cellgate_restart = None

    def test_cellgate_forked(self):
        self.flush_channels()
        reply, output = self.execute_helper("import os; print(os.readlink('/proc/self/exe'))")
        self.assertEqual(reply["content"]["status"], "ok")
        text = "".join(m["content"].get("text", "") for m in output if m["msg_type"] == "stream")
        self.assertTrue(text.strip().endswith("cellgate-zygote"), text)


if __name__ == "__main__":
    unittest.main()
