# SPDX-License-Identifier: Apache-2.0
# What a jail leaves when its helper (cellgate-jail) is SIGKILLed: the helper removes its own cgroup
# on every ordinary exit, but a killed one cannot. The gateway releases it: the dirs go, and tasks
# still in them (a jail frozen by the v1 freezer cannot even die of its PDEATHSIG) are thawed and killed.
import glob
import os
import signal
import time

import pytest

import targets as targets_mod
from conftest import selected_targets

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="jails are a cellgate extension")

CGROUP_ROOT = "/sys/fs/cgroup"
# How long the gateway may take to remove a dead jail's cgroups: a bound on a hang, not a speed target
# (a PVM guest tears a jail down several times slower than this VM; the wait ends as soon as they go).
RELEASE_BOUND = 30


cellgate_target = targets_mod.started_jailed_cellgate


def cgroup_dirs(kid):
    """Every cgroup dir (v1 controllers and v2) of the kernel's jails, restarted ones included."""
    # cellgate/<kernel>, or cellgate/<owner>/<kernel> (each user's kernels under an owner level)
    return sorted(d for mid in ([], ["*"]) for d in glob.glob(os.path.join(CGROUP_ROOT, "*", "cellgate", *mid, kid + "*")) +
                  glob.glob(os.path.join(CGROUP_ROOT, "cellgate", *mid, kid + "*")))


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_for(what, cond, timeout, t):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "%s\n%s" % (what, t.log_tail(2000))
        time.sleep(0.1)


def kernel_state(t, kid):
    r = t.get("api/kernels/" + kid)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()["execution_state"]


def test_frozen_jail_of_a_killed_helper_is_thawed_killed_and_removed():
    """v1 freezer: a frozen task sleeps in the refrigerator even with SIGKILL pending. Without the
    release the killed helper's init and kernel stayed frozen forever, holding their memory."""
    if not os.path.isdir(os.path.join(CGROUP_ROOT, "freezer")):
        pytest.skip("no v1 freezer hierarchy on this host")
    t = cellgate_target("--pause-after", "1", "--freezer", "v1")
    try:
        kid = t.start_paused_kernel("x = 1")
        st = t.jail_status(kid)
        old = [st["init_pid"], st["kernel_pid"]]
        os.kill(st["helper_pid"], signal.SIGKILL)
        wait_for("the killed helper's frozen jail still runs", lambda: not any(map(alive, old)), 15, t)
        # The kernel restarts in a new jail; once it is deleted, nothing of either jail is left.
        wait_for("kernel did not restart", lambda: kernel_state(t, kid) == "idle", 60, t)
        assert t.jail_status(kid)["kernel_pid"] not in old
        t.delete_kernel(kid)
        wait_for("cgroup dirs left behind: %s" % cgroup_dirs(kid), lambda: not cgroup_dirs(kid), RELEASE_BOUND, t)
    finally:
        t.stop()


def test_cgroup_of_a_jail_that_died_while_the_gateway_was_down_is_removed():
    t = cellgate_target()
    try:
        kid = t.start_kernel()["id"]
        st = t.jail_status(kid)
        old = [st["init_pid"], st["kernel_pid"]]
        t.terminate_gateway()  # the kernel outlives the gateway, as it must
        os.kill(st["helper_pid"], signal.SIGKILL)
        wait_for("the killed helper's jail still runs", lambda: not any(map(alive, old)), 15, t)
        time.sleep(0.5)
        # Nothing else removes them: the helper that would have is gone.
        assert os.path.isdir(st["cgroup"]) and cgroup_dirs(kid), cgroup_dirs(kid)
        t.start()
        assert kernel_state(t, kid) == "dead"
        wait_for("cgroup dirs left behind: %s" % cgroup_dirs(kid), lambda: not cgroup_dirs(kid), RELEASE_BOUND, t)
        t.delete_kernel(kid)
    finally:
        t.stop()
