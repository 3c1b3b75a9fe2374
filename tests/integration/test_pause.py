# SPDX-License-Identifier: Apache-2.0
# Paused idle kernels: frozen by the cgroup freezer (v1 freezer.state and v2 cgroup.freeze), thawed
# by their next message with memory kept, never mistaken for dead by the heartbeat, still culled.
import os
import signal
import time

import pytest

import targets as targets_mod
from conftest import selected_targets
from jupyter_ws import KernelWS

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="pausing is a cellgate extension")

HB_TIMEOUT = 4
V1_FREEZER = "/sys/fs/cgroup/freezer/cellgate"


cellgate_target = targets_mod.started_jailed_cellgate


def model(t, kid):
    r = t.get("api/kernels/" + kid)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()


def wait_paused(t, kid, want=True, timeout=30):
    return t.wait_paused(kid, want, timeout)


def cgroups_of(t, kid):
    """(unified v2 dir, v1 freezer dir) of the kernel's jail, from the helper's status file."""
    unified = t.jail_status(kid)["cgroup"]
    return unified, os.path.join(V1_FREEZER, unified.split("/cellgate/", 1)[1])  # [<owner>/]<leaf>


def read(path):
    with open(path) as f:
        return f.read()


def procs(cgdir):
    return [int(p) for p in read(os.path.join(cgdir, "cgroup.procs")).split()]


def proc_state(pid):
    stat = read("/proc/%d/stat" % pid)
    return stat[stat.rindex(")") + 2]


def assert_frozen(freezer, unified, v1dir):
    if freezer == "v1":
        assert read(os.path.join(v1dir, "freezer.state")).strip() == "FROZEN"
        pids = procs(v1dir)
        assert pids
        # The refrigerator shows as uninterruptible sleep: every task, whatever signals it gets.
        states = {pid: proc_state(pid) for pid in pids}
        assert set(states.values()) == {"D"}, states
    else:
        assert read(os.path.join(unified, "cgroup.freeze")).strip() == "1"
        assert "frozen 1" in read(os.path.join(unified, "cgroup.events")).splitlines()


@pytest.fixture(scope="module", params=["v1", "v2"])
def paused_gateway(request):
    freezer = request.param
    if freezer == "v1" and not os.path.isdir(V1_FREEZER.rsplit("/", 1)[0]):
        pytest.skip("no v1 freezer hierarchy on this host")
    t = cellgate_target("--pause-after", "2", "--heartbeat-timeout", str(HB_TIMEOUT), "--freezer", freezer)
    yield t, freezer
    t.stop()


def test_idle_kernel_pauses_and_thaws_with_memory(paused_gateway):
    t, freezer = paused_gateway
    kid = t.start_kernel()["id"]
    kws = KernelWS(t.url, t.token, kid)
    try:
        r = kws.execute("x = 41\nimport os\nprint(os.getpid())")
        assert r.reply["content"]["status"] == "ok"
        m = wait_paused(t, kid)
        # Clients see an idle kernel (it answers anything: the message thaws it); `paused` says why it uses no CPU.
        assert m["execution_state"] == "idle"
        unified, v1dir = cgroups_of(t, kid)
        assert_frozen(freezer, unified, v1dir)
        kernel_pid = t.jail_status(kid)["kernel_pid"]

        # Held frozen past twice the heartbeat timeout: not restarted, still frozen, same process.
        time.sleep(2 * HB_TIMEOUT + 1)
        m = model(t, kid)
        assert m["paused"] is True and m["execution_state"] == "idle", m
        assert_frozen(freezer, unified, v1dir)
        assert t.jail_status(kid)["kernel_pid"] == kernel_pid
        assert "no heartbeat" not in t.log_tail(400)

        # The next WebSocket message thaws it; x survived.
        r = kws.execute("print(x + 1)")
        assert r.reply["content"]["status"] == "ok"
        assert r.stdout().strip() == "42"
        assert model(t, kid)["paused"] is False
        assert t.jail_status(kid)["kernel_pid"] == kernel_pid
        if freezer == "v1":
            assert read(os.path.join(v1dir, "freezer.state")).strip() == "THAWED"
        else:
            assert read(os.path.join(unified, "cgroup.freeze")).strip() == "0"
    finally:
        kws.close()
        t.delete_kernel(kid)


def test_sigcont_cannot_undo_the_freezer(paused_gateway):
    """SIGSTOP could be undone from inside (kill -CONT); the freezer cannot. Inside, the jail has no
    cgroup files to write and cannot mount cgroupfs; SIGCONT to every task, even from host root, leaves
    them frozen."""
    t, freezer = paused_gateway
    kid = t.start_kernel()["id"]
    kws = KernelWS(t.url, t.token, kid)
    try:
        probe = ("import ctypes, os, signal\n"
                 "os.makedirs('/tmp/cg', exist_ok=True)\n"
                 "libc = ctypes.CDLL(None, use_errno=True)\n"
                 "rc = libc.mount(b'none', b'/tmp/cg', b'cgroup2', 0, None)\n"
                 "rc1 = libc.mount(b'none', b'/tmp/cg', b'cgroup', 0, b'freezer')\n"
                 "os.kill(os.getpid(), signal.SIGCONT)\n"
                 "print(os.path.exists('/sys/fs/cgroup'), rc, rc1)\n")
        r = kws.execute(probe)
        assert r.reply["content"]["status"] == "ok", r.reply
        assert r.stdout().split() == ["False", "-1", "-1"]
        wait_paused(t, kid)
        unified, v1dir = cgroups_of(t, kid)
        for pid in procs(v1dir if freezer == "v1" else unified):
            os.kill(pid, signal.SIGCONT)
        time.sleep(0.5)
        assert_frozen(freezer, unified, v1dir)
        assert model(t, kid)["paused"] is True
        # REST interrupt thaws too (a signal to a frozen kernel would wait for the thaw).
        assert t.post("api/kernels/%s/interrupt" % kid).status_code == 204
        assert model(t, kid)["paused"] is False
        r = kws.execute("print('alive')")
        assert r.stdout().strip() == "alive"
    finally:
        kws.close()
        t.delete_kernel(kid)


def test_paused_kernel_is_culled():
    # Culled well after it is paused, even on a loaded host.
    t = cellgate_target("--pause-after", "1", "--cull-idle-timeout", "15", "--cull-interval", "1")
    try:
        kid = t.start_kernel()["id"]
        wait_paused(t, kid)
        helper = t.jail_status(kid)["helper_pid"]
        deadline = time.monotonic() + 60
        while t.get("api/kernels/" + kid).status_code != 404:
            assert time.monotonic() < deadline, t.log_tail()
            time.sleep(0.5)
        # The jail is gone, not left frozen behind.
        deadline = time.monotonic() + 15
        while os.path.exists("/proc/%d" % helper) and read("/proc/%d/stat" % helper).split()[2] != "Z":
            assert time.monotonic() < deadline, "jail helper still running after the cull"
            time.sleep(0.2)
    finally:
        t.stop()


def test_kernel_paused_across_a_gateway_restart_is_thawed_on_adoption():
    t = cellgate_target("--pause-after", "1")
    try:
        kid = t.start_paused_kernel("x = 'kept'")
        unified, _ = cgroups_of(t, kid)
        t.terminate_gateway()  # the jail keeps running, frozen
        assert read(os.path.join(unified, "cgroup.freeze")).strip() == "1"
        t.start()
        # Re-adoption needs a kernel_info_reply: the frozen kernel is thawed first.
        deadline = time.monotonic() + 60
        while model(t, kid)["execution_state"] != "idle":
            assert time.monotonic() < deadline, t.log_tail()
            time.sleep(0.3)
        kws = KernelWS(t.url, t.token, kid)
        try:
            assert kws.execute("print(x)").stdout().strip() == "kept"
        finally:
            kws.close()
        t.delete_kernel(kid)
    finally:
        t.stop()


def test_kernel_is_not_paused_under_a_running_tool():
    """tools/process runs in the jail's cgroup while the kernel itself stays idle: the pauser must
    leave the jail alone until the call returns, or the process would freeze with it."""
    t = cellgate_target("--pause-after", "1")
    try:
        kid = t.start_kernel()["id"]
        wait_paused(t, kid)
        r = t.post("api/kernels/%s/tools/process" % kid,
                   json={"command": "sh", "args": ["-c", "sleep 4; echo done"], "timeout": 15})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["exit_code"] == 0 and not out["timed_out"] and out["stdout"].strip() == "done", out
        wait_paused(t, kid)  # and it pauses again once idle
        t.delete_kernel(kid)
    finally:
        t.stop()
