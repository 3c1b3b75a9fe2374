# SPDX-License-Identifier: BSD-3-Clause
# jailed_kernel: a kernelspec whose argv goes through cellgate-jail, and a jupyter_client
# KernelManager on it with transport ipc (the jail has no shared network, so tcp cannot work).
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

SKIP_RC = 4
KERNEL_NAME = "cellgate-jailed-python3"
IPYKERNEL_ARGV = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
DEBIAN_KERNELS = "/usr/share/jupyter/kernels"


def debian_kernelspec(name):
    """Debian's kernel.json for `name` (ir, octave, ...), or None when the package is not installed.
    A bare `python`/`python3` argv[0] becomes /usr/bin/python3, as cellgate's launcher (and
    jupyter_client) make it: python3-octave-kernel ships argv ["python", "-m", "octave_kernel", ...]."""
    path = os.path.join(DEBIAN_KERNELS, name, "kernel.json")
    try:
        with open(path) as f:
            spec = json.load(f)
    except FileNotFoundError:
        return None
    if spec["argv"][0] in ("python", "python3"):
        spec["argv"][0] = "/usr/bin/python3"
    return spec


def require_kernel(name):
    """Debian's kernelspec `name`; exits with SKIP_RC when its package is missing. CI installs every
    one (scripts/install-deps.sh), so there a skip shows as a skip, never as a pass."""
    spec = debian_kernelspec(name)
    if spec is None:
        print(f"SKIP: kernelspec {name} is not installed ({DEBIAN_KERNELS}/{name})", flush=True)
        sys.exit(SKIP_RC)
    return spec


def require_or_skip():
    """Exits with the ctest SKIP_RETURN_CODE when the machine cannot run jails."""
    jail = os.environ.get("CELLGATE_JAIL", "")
    reason = None
    if os.geteuid() != 0:
        reason = "needs root"
    elif not (jail and os.access(jail, os.X_OK)):
        reason = f"cellgate-jail not built ({jail!r})"
    elif subprocess.run(["/usr/bin/unshare", "-U", "/usr/bin/true"]).returncode != 0:
        reason = "cannot create a user namespace here"
    if reason:
        print(f"SKIP: {reason}", flush=True)
        sys.exit(SKIP_RC)
    return jail


def require_module(name):
    """Exits with SKIP_RC when Debian's python3 cannot import `name` (its package is missing)."""
    if subprocess.run(["/usr/bin/python3", "-c", f"import {name}"], capture_output=True).returncode != 0:
        print(f"SKIP: python module {name} is not installed", flush=True)
        sys.exit(SKIP_RC)


class JailedKernel:
    """Owns a temp JUPYTER_PATH with the kernelspec and a short runtime dir (ipc paths <= 107 bytes).
    `spec` is a kernel.json (default: ipykernel) whose argv runs inside cellgate-jail, with the
    default policy and nothing else: what a new user gets."""

    def __init__(self, jail, spec=None, name=KERNEL_NAME, jail_args=()):
        spec = dict(spec or {"argv": IPYKERNEL_ARGV, "display_name": "Python 3", "language": "python",
                             "interrupt_mode": "signal"})
        self.name = name
        self.spec_dir = tempfile.mkdtemp(prefix="cg-kspec-")
        kdir = os.path.join(self.spec_dir, "kernels", name)
        os.makedirs(kdir)
        spec["argv"] = [jail, "--connection-file", "{connection_file}", *jail_args, "--", *spec["argv"]]
        spec["display_name"] = spec.get("display_name", name) + " (cellgate jail)"
        with open(os.path.join(kdir, "kernel.json"), "w") as f:
            json.dump(spec, f)
        os.makedirs("/run/cellgate", exist_ok=True)
        self.runtime = tempfile.mkdtemp(prefix="t-", dir="/run/cellgate")
        os.environ["JUPYTER_PATH"] = self.spec_dir
        os.environ["JUPYTER_RUNTIME_DIR"] = self.runtime
        self.km = None
        self.kc = None

    def start(self, timeout=120):
        ksm = KernelSpecManager()
        ksm.kernel_dirs = [os.path.join(self.spec_dir, "kernels")]
        self.km = KernelManager(kernel_name=self.name, kernel_spec_manager=ksm, transport="ipc")
        self.km.connection_file = os.path.join(self.runtime, "k.json")
        self.km.ip = os.path.join(self.runtime, "k")
        self.km.start_kernel()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=timeout)
        return self.km, self.kc

    def helper_pid(self):
        return self.km.provisioner.process.pid if self.km and self.km.provisioner else None

    def leftovers(self, helper, grace=15):
        """What the jail of helper pid `helper` left behind after shutdown (helper, cgroup dirs)."""
        name = f"jail-{helper}"  # cellgate-jail's default --name
        deadline = time.monotonic() + grace
        while True:
            problems = []
            if os.path.exists(f"/proc/{helper}"):
                problems.append(f"cellgate-jail {helper} still running")
            # v1 hybrid: one dir per controller (and unified/); pure v2: /sys/fs/cgroup/cellgate/<name>.
            problems += [f"cgroup {d} left behind" for d in glob.glob(f"/sys/fs/cgroup/*/cellgate/{name}") +
                         glob.glob(f"/sys/fs/cgroup/cellgate/{name}")]
            if os.path.exists(self.runtime):
                problems.append(f"runtime dir {self.runtime} left behind")
            if not problems or time.monotonic() > deadline:
                return problems
            time.sleep(0.1)

    def stop(self):
        try:
            if self.kc is not None:
                self.kc.stop_channels()
            if self.km is not None and self.km.has_kernel:
                try:
                    self.km.shutdown_kernel(now=False)
                except Exception as e:  # the verdict is the tests'; shutdown must still clean up
                    print(f"shutdown: {e}", flush=True)
                    self.km.shutdown_kernel(now=True)
        finally:
            shutil.rmtree(self.spec_dir, ignore_errors=True)
            # The kernel may still be deleting its sockets (a killed helper's jail dies a moment
            # later): retry until the dir is really gone.
            deadline = time.monotonic() + 15
            while os.path.exists(self.runtime) and time.monotonic() < deadline:
                shutil.rmtree(self.runtime, ignore_errors=True)
                if os.path.exists(self.runtime):
                    time.sleep(0.1)
