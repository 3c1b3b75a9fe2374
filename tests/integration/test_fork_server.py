# SPDX-License-Identifier: BSD-3-Clause
# The fork server (cellgate-zygote) behind `cellgate serve --spawner jail`: ipykernels come from it,
# start cold when it is gone, and survive a gateway restart like any jailed kernel.
import base64
import json
import os
import signal
import time

import pytest

import targets as tm


# The fork server is on by default: no flag, so that these tests check the default.
jail_target = tm.jail_target


def zygote_socket(t):
    return os.path.join(t.run_dir, "zygote.sock")


def wait_for_zygote(t, timeout=120):
    deadline = time.monotonic() + timeout
    while not os.path.exists(zygote_socket(t)):
        assert time.monotonic() < deadline, "no fork server socket:\n" + t.log_tail()
        time.sleep(0.1)


def zygote_pid(t):
    """The fork server serving this gateway's socket (found by its command line)."""
    needle = zygote_socket(t).encode()
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if cmd[0].endswith(b"cellgate-zygote") and needle in cmd:
            return int(p)
    return None


def run(t, kid, code):
    r = t.post("api/kernels/%s/execute" % kid, json={"code": code, "timeout": 60})
    assert r.status_code == 200, r.text
    rep = r.json()
    assert rep["status"] == "ok", rep
    return "".join(o.get("text", "") for o in rep["outputs"] if o.get("name") == "stdout").strip()


def exe(t, kid):
    """What the kernel process is an image of: cellgate-zygote when forked, python3.x when cold."""
    return run(t, kid, "import os; print(os.readlink('/proc/self/exe'))")


def test_ipykernels_are_forked_and_start_cold_without_the_fork_server_until_it_is_back():
    t = jail_target()
    t.start()
    try:
        wait_for_zygote(t)
        forked = t.start_kernel()["id"]
        assert exe(t, forked).endswith("cellgate-zygote"), t.log_tail()
        run(t, forked, "x = 41")
        pid = zygote_pid(t)
        assert pid, "fork server process not found"
        old_inode = os.stat(zygote_socket(t)).st_ino
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        cold = t.start_kernel()["id"]
        assert "python3" in exe(t, cold), t.log_tail()
        assert "fork server unavailable; cold start" in t.log_tail(200)
        assert run(t, forked, "print(x + 1)") == "42", "the forked kernel outlives its fork server"
        # The gateway starts a new fork server (after a few seconds); once it serves, kernels fork again.
        deadline = time.monotonic() + 120
        while True:
            new = zygote_pid(t)
            if new and new != pid and os.stat(zygote_socket(t)).st_ino != old_inode:
                break
            assert time.monotonic() < deadline, "no new fork server:\n" + t.log_tail()
            time.sleep(0.2)
        again = t.start_kernel()["id"]
        assert exe(t, again).endswith("cellgate-zygote"), t.log_tail()
    finally:
        t.stop()


def test_forked_kernel_gets_its_own_environment():
    t = jail_target()
    t.start()
    try:
        wait_for_zygote(t)
        kid = t.start_kernel(name=tm.TEST_SPEC)["id"]
        assert exe(t, kid).endswith("cellgate-zygote")
        env = run(t, kid, "import os, json; print(json.dumps(dict(os.environ)))")
        env = json.loads(env)
        assert env.get(tm.SPEC_ENV[0]) == tm.SPEC_ENV[1], env
        assert env.get("KERNEL_ID") == kid, env
        assert tm.SECRET_NAME not in env, "the gateway's environment leaked"
        assert "OMP_NUM_THREADS" not in env and "MPLCONFIGDIR" in env, "the fork server's own settings leaked"
    finally:
        t.stop()


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_forked_kernel_is_readopted_after_a_gateway_restart(kill):
    """Stopped or killed outright, the gateway takes its fork server with it (PR_SET_PDEATHSIG for the
    kill), while the kernel the fork server forked lives on and is re-adopted."""
    t = jail_target()
    t.start()
    try:
        wait_for_zygote(t)
        kid = t.start_kernel()["id"]
        assert exe(t, kid).endswith("cellgate-zygote")
        run(t, kid, "x = 7")
        zpid = zygote_pid(t)
        assert zpid, "no fork server process"
        if kill:
            t.kill_gateway()
        else:
            t.terminate_gateway()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists("/proc/%d" % zpid):
            time.sleep(0.1)
        assert not os.path.exists("/proc/%d" % zpid), "the fork server outlived its gateway"
        t.start()
        listed = [k["id"] for k in t.get("api/kernels").json()]
        assert kid in listed, (listed, t.log_tail())
        assert run(t, kid, "print(x)") == "7", t.log_tail()
    finally:
        t.stop()


def test_fork_server_off():
    t = jail_target("--fork-server", "off")
    t.start()
    try:
        kid = t.start_kernel()["id"]
        assert "python3" in exe(t, kid)
        assert not os.path.exists(zygote_socket(t))
    finally:
        t.stop()


def test_forked_kernel_shows_matplotlib_figures_inline():
    t = jail_target()
    t.start()
    try:
        wait_for_zygote(t)
        kid = t.start_kernel()["id"]
        assert exe(t, kid).endswith("cellgate-zygote"), t.log_tail()
        for code in ("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",  # shown explicitly
                     "plt.figure()\nplt.plot([3, 4]);"):  # left open: shown at the end of the cell
            r = t.post("api/kernels/%s/execute" % kid, json={"code": code, "timeout": 60})
            assert r.status_code == 200, r.text
            rep = r.json()
            assert rep["status"] == "ok", rep
            pngs = [o["data"]["image/png"] for o in rep["outputs"] if "image/png" in o.get("data", {})]
            assert len(pngs) == 1, rep["outputs"]
            assert base64.b64decode(pngs[0]).startswith(b"\x89PNG"), pngs[0][:40]
    finally:
        t.stop()


KSM = "/sys/kernel/mm/ksm"
KSM_SETTINGS = ("run", "advisor_mode", "advisor_max_cpu", "pages_to_scan", "sleep_millisecs", "smart_scan")


def ksm_settings():
    out = {}
    for name in KSM_SETTINGS:
        try:
            with open(os.path.join(KSM, name)) as f:
                out[name] = f.read().strip()
        except OSError:
            pass
    return out


def ksm_restore(saved):
    """Puts KSM back as found (run last to first: ksmd stops before its bound changes)."""
    for name in ("run",) + tuple(n for n in saved if n != "run"):
        value = saved[name]
        if "[" in value:  # "[none] scan-time": the selected one
            value = value[value.index("[") + 1:value.index("]")]
        with open(os.path.join(KSM, name), "w") as f:
            f.write(value + "\n")


def merge_any(pid):
    """The kernel process's PR_SET_MEMORY_MERGE flag as /proc/PID/ksm_stat shows it (Linux 6.8+)."""
    with open(f"/proc/{pid}/ksm_stat") as f:
        return next(line.split(":")[1].strip() for line in f if line.startswith("ksm_merge_any:"))


@pytest.mark.skipif(not os.path.exists(os.path.join(KSM, "run")), reason="no KSM here")
def test_kernel_memory_merge_marks_every_kernel_only_when_on_and_off_touches_no_ksm_setting():
    saved = ksm_settings()
    t = jail_target()
    t.start()
    try:
        wait_for_zygote(t)
        kid = t.start_kernel()["id"]
        assert exe(t, kid).endswith("cellgate-zygote"), t.log_tail()
        assert merge_any(t.jail_status(kid)["kernel_pid"]) == "no"
        assert ksm_settings() == saved, "--kernel-memory-merge off changed host-wide KSM settings"
    finally:
        t.stop()
    t = jail_target("--kernel-memory-merge", "on", "--kernel-memory-merge-rate", "1000")
    try:
        t.start()
        wait_for_zygote(t)
        forked = t.start_kernel()["id"]
        assert exe(t, forked).endswith("cellgate-zygote"), t.log_tail()
        status = t.jail_status(forked)
        assert merge_any(status["kernel_pid"]) == "yes", t.log_tail()
        # Only the kernel: its jail's helper and init are not the tenant's memory to share.
        assert merge_any(status["helper_pid"]) == "no" and merge_any(status["init_pid"]) == "no"
        now = ksm_settings()
        assert (now["run"], now["pages_to_scan"], now["sleep_millisecs"]) == ("1", "20", "20"), now
        assert "[none]" in now.get("advisor_mode", "[none]"), now
        assert "kernel memory merge on" in t.log_tail(200) and "side channel" in t.log_tail(200)
        # A merged page stays a page of the kernel's: it still computes (copy-on-write of KSM pages).
        assert run(t, forked, "print(sum(range(10)))") == "45"
    finally:
        t.stop()
        ksm_restore(saved)
