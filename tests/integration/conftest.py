# SPDX-License-Identifier: Apache-2.0
# pytest fixtures: every test runs against each selected server ("target") and its kernels.
"""Targets are chosen with CELLGATE_TEST_TARGETS (comma list, default "jupyter_server,cellgate").

The cellgate target needs CELLGATE_BIN. Without it the cellgate tests are skipped, unless
CELLGATE_TEST_REQUIRE=1 (set by ctest when the cellgate target exists), which turns the skip into a
failure so that a missing binary can never pass silently.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import targets as targets_mod  # noqa: E402
from jupyter_ws import KernelWS  # noqa: E402


def selected_targets():
    names = os.environ.get("CELLGATE_TEST_TARGETS", "jupyter_server,cellgate")
    return [n.strip() for n in names.split(",") if n.strip()]


@pytest.fixture(scope="session", params=selected_targets())
def target(request):
    name = request.param
    if name == "cellgate":
        path, why = targets_mod.cellgate_binary()
        if not path:
            if os.environ.get("CELLGATE_TEST_REQUIRE") == "1":
                pytest.fail("cellgate target required but " + why)
            pytest.skip(why)
    # iopub rate limiting is jupyter_server's policy, not part of the API under test (the bench
    # measures it); off here so big-output tests mean the same on both targets.
    extra = (["--ServerApp.iopub_data_rate_limit=0", "--ServerApp.iopub_msg_rate_limit=0"]
             if name == "jupyter_server" else [])
    t = targets_mod.make_target(name, extra_args=extra)
    t.start()
    yield t
    t.stop()


def cellgate_only(target, why):
    """Checks where cellgate intentionally differs from jupyter_server 1.23."""
    if not target.is_cellgate:
        pytest.skip("cellgate-only: " + why)


@pytest.fixture
def new_kernel(target):
    """Factory: start a kernel via REST; every kernel is DELETEd after the test."""
    made = []

    def make(name=None, env=None):
        model = target.start_kernel(name=name, env=env)
        made.append(model["id"])
        return model
    yield make
    for kid in made:
        target.delete_kernel(kid)


@pytest.fixture
def connect(target):
    """Factory: open a KernelWS; all are closed after the test."""
    opened = []

    def make(kernel_id, protocol="legacy", **kw):
        c = KernelWS(target.url, target.token, kernel_id, protocol=protocol, **kw)
        opened.append(c)
        return c
    yield make
    for c in opened:
        c.close()


@pytest.fixture(scope="module")
def shared_kernel(target):
    """One kernel for the read-mostly tests of a module (kernel start is the slow part)."""
    model = target.start_kernel()
    yield model
    target.delete_kernel(model["id"])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report ends with the logs of the servers it ran, before teardown deletes them:
    a hang seen only under CI's load is otherwise a timeout with no trace of the server's side."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for t in list(targets_mod.Target.made):
        tail = t.log_tail(120)
        if tail:
            report.sections.append(("%s log, last 120 lines (%s)" % (t.name, t.log_path), tail))
