# SPDX-License-Identifier: Apache-2.0
# Hole 9 of issue 20: `tools/process` (cellgate-jail --join) ran with the global --jail-policy rather
# than the kernelspec's own, and kept what the gateway had and the jail sheds: a negative nice and
# oom_score_adj, the real-time I/O class, generous RLIMIT_RTPRIO/RLIMIT_NICE. A command run through
# the tool must be exactly as held as the kernel it joins.
import ctypes
import json
import os
import resource
import signal
import subprocess

import pytest

import hostile as h
import targets as tm

PROBE = r'''
import ctypes, json, os, resource
libc = ctypes.CDLL(None, use_errno=True)
try:
    os.mkfifo("/tmp/probe-fifo-%d" % os.getpid())
    fifo = "made"
except OSError as e:
    fifo = "refused"
print(json.dumps({
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "oom_score_adj": int(open("/proc/self/oom_score_adj").read()),
    "ioprio_class": libc.syscall(252, 1, 0) >> 13,   # ioprio_get(IOPRIO_WHO_PROCESS, self)
    "rtprio": resource.getrlimit(resource.RLIMIT_RTPRIO)[1],
    "rlimit_nice": resource.getrlimit(resource.RLIMIT_NICE)[1],
    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[1],
    "fifo": fifo,
}))
'''


def generous():
    """preexec of the gateway: what a careless service manager may hand it, and the jail must shed.
    Each step is best effort: raising a hard rlimit or lowering oom_score_adj needs CAP_SYS_RESOURCE,
    which some root shells lack (the test then checks what the gateway did get, see gateway_state)."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG, as the harness does
    steps = [lambda: os.setpriority(os.PRIO_PROCESS, 0, -5),
             lambda: resource.setrlimit(resource.RLIMIT_RTPRIO, (50, 50)),
             lambda: resource.setrlimit(resource.RLIMIT_NICE, (30, 30)),
             lambda: ctypes.CDLL(None).syscall(251, 1, 0, (1 << 13) | 4)]  # ioprio_set(self, RT, 4)
    for step in steps:
        try:
            step()
        except (OSError, ValueError):
            pass
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("-500")
    except OSError:
        pass


def gateway_state(pid):
    """What the gateway process holds of it: nice, oom_score_adj, RLIMIT_RTPRIO and RLIMIT_NICE."""
    with open("/proc/%d/stat" % pid) as f:
        nice = int(f.read().rsplit(")", 1)[1].split()[16])
    with open("/proc/%d/oom_score_adj" % pid) as f:
        oom = int(f.read())
    rtprio = resource.prlimit(pid, resource.RLIMIT_RTPRIO)[1]
    rlimit_nice = resource.prlimit(pid, resource.RLIMIT_NICE)[1]
    return {"nice": nice, "oom_score_adj": oom, "rtprio": rtprio, "rlimit_nice": rlimit_nice}


class GenerousGateway(tm.CellgateTarget):
    def _popen(self, cmd, **kw):
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=generous, **kw)


def test_a_joined_command_is_held_like_the_kernel_it_joins():
    path, why = tm.cellgate_binary()
    if not path:
        pytest.fail(why)
    if os.geteuid() != 0:
        pytest.skip("the jail needs root")
    t = GenerousGateway(path, spawner="jail")
    policy = os.path.join(t.tmp, "strict-policy.json")
    with open(policy, "w") as f:
        json.dump({"seccomp": {"deny": ["mknod", "mknodat"]}, "limits": {"nofile": 321}}, f)
    spec = os.path.join(t.kernels_dir, "strict")
    os.makedirs(spec)
    with open(os.path.join(spec, "kernel.json"), "w") as f:
        json.dump({"argv": [tm.PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "strict", "language": "python",
                   "metadata": {"cellgate": {"policy": policy}}}, f)
    try:
        t.start()
        gw = gateway_state(t.proc.pid)
        print("the gateway holds:", gw)
        assert gw["nice"] < 0, "the test could not give the gateway a negative nice"
        kid = t.start_kernel(name="strict")["id"]
        kernel = json.loads(h.stdout_of(h.execute(t, kid, PROBE)))
        r = t.post("api/kernels/%s/tools/process" % kid, json={"command": tm.PYTHON, "args": ["-c", PROBE]})
        assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
        joined = json.loads(r.json()["stdout"])
        print("kernel:", kernel, "\njoined:", joined)
        assert kernel["fifo"] == "refused", "the kernelspec's policy holds the kernel"
        assert joined == kernel, "the joined command differs from its kernel"
        assert joined["nice"] >= 0 and joined["oom_score_adj"] >= 0 and joined["ioprio_class"] != 1
        assert joined["rtprio"] == 0 and joined["rlimit_nice"] == 0 and joined["nofile"] == 321
        t.delete_kernel(kid)
    finally:
        t.stop()
