# SPDX-License-Identifier: Apache-2.0
# Process limits of `cellgate serve`: room for hundreds of kernels and a thousand WebSockets.
import resource

import pytest

import targets as tm
from conftest import cellgate_only


def test_serve_raises_its_open_files_soft_limit_to_the_hard_limit(target):
    cellgate_only(target, "cellgate's own start-up")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("hard limit %d leaves nothing to raise" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))  # inherited by the gateway
    try:
        t = tm.CellgateTarget(target.binary, spawner=target.spawner)
        t.start()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        with open("/proc/%d/limits" % t.proc.pid) as f:
            line = next(x for x in f if x.startswith("Max open files"))
        got_soft, got_hard = line.split()[3:5]
        assert got_soft == got_hard, line
        assert got_soft != "256", line
    finally:
        t.stop()
