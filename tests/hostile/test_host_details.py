# SPDX-License-Identifier: Apache-2.0
# Hole 11 of issue 20: host details were visible. Inside a jail, /proc/self/mountinfo showed the
# workspace's host path (the data dir, the owner's name, the workspace's name); on the host, `ps`
# showed the KERNEL_* values a client passed (cellgate-jail --env) and the gateway's --token.
import os
import secrets
import threading

import hostile as h
import targets as tm

MOUNTS = "print(open('/proc/self/mountinfo').read() + open('/proc/self/mounts').read())"


def host_command_lines():
    """Every process's command line on the host, as text."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                found[int(pid)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            pass
    return found


def test_a_jail_sees_no_host_path_nor_other_users():
    def add_users(t):
        t.tokens = {"admin": t.add_user("admin", "--admin"), "alice": t.add_user("alice"), "bob": t.add_user("bob")}
        t.token = t.tokens["admin"]
        t.http.headers["Authorization"] = "token " + t.token
    t = h.jailed()
    t.pre_start = add_users
    try:
        t.start()
        alice = tm.TokenClient(t, "alice", t.tokens["alice"])
        bob = tm.TokenClient(t, "bob", t.tokens["bob"])
        a = alice.api("POST", "api/kernels", json={"name": "python3", "workspace": "alices-thesis"}).json()["id"]
        b = bob.api("POST", "api/kernels", json={"name": "python3"}).json()["id"]
        r = bob.api("POST", "api/kernels/%s/execute" % b, json={"code": MOUNTS, "timeout": 60})
        seen = "".join(o.get("text", "") for o in r.json()["outputs"])
        print(seen)
        assert "/workspace" in seen
        for secret in (t.data_dir, os.path.realpath(t.data_dir), "alice", "alices-thesis", "/workspaces/"):
            assert secret not in seen, "%r is visible in bob's jail" % secret
        alice.api("DELETE", "api/kernels/" + a)
        bob.api("DELETE", "api/kernels/" + b)
    finally:
        t.stop()


def test_no_kernel_variable_nor_token_on_a_host_command_line():
    value = "kv-" + secrets.token_hex(12)
    token = "tok-" + secrets.token_hex(20)
    t = h.jailed()
    token_file = os.path.join(t.tmp, "token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    os.chmod(token_file, 0o600)
    t.token = token
    t.http.headers["Authorization"] = "token " + token
    t.extra_args += h.options(t.binary, token_file=token_file)
    try:
        t.start()
        kid = t.start_kernel(env={"KERNEL_PROJECT_KEY": value})["id"]
        out = h.stdout_of(h.execute(t, kid, "import os; print(os.environ.get('KERNEL_PROJECT_KEY'))"))
        assert out.strip() == value, "the kernel still gets its variable"
        # tools/process joins the jail with the kernel's environment: the join's command line too,
        # looked at while it runs.
        joined = {}
        thread = threading.Thread(target=lambda: joined.update(r=t.post(
            "api/kernels/%s/tools/process" % kid, json={"command": "sleep", "args": ["4"], "timeout": 20})))
        thread.start()
        h.wait_until(lambda: any(cmd.startswith("sleep 4") for cmd in host_command_lines().values()), 15,
                     "the joined command")
        lines = host_command_lines()
        thread.join()
        assert joined["r"].status_code == 200, joined["r"].text
        leaks = {pid: cmd for pid, cmd in lines.items() if value in cmd or token in cmd}
        assert not leaks, "visible to every host user (ps): %s" % leaks
        t.delete_kernel(kid)
    finally:
        t.stop()
