# SPDX-License-Identifier: Apache-2.0
# Hostile input, seeded and deterministic: every REST route and method, malformed JSON bodies (deep
# nesting, wrong types, invalid UTF-8), workspace paths that try to escape (also through symlinks a
# kernel makes), raw HTTP/1.1 abuse, WebSocket payload and frame abuse, malformed JSON-RPC on /mcp,
# and a kernel that answers with a deeply nested output.
#
# After every case the gateway must still be running and serving; every HTTP error is 4xx (a 500
# for client input is a bug) with a JSON {"reason", "message"} body; and, at checkpoints, a kernel
# still executes, a workspace file written beforehand and a file outside the workspace that a
# kernel-made symlink points at are unchanged.
import base64
import io
import json
import os
import random
import socket
import struct
import tarfile
import uuid

import pytest
import requests
import websocket

import targets as targets_mod
from conftest import selected_targets
from jupyter_ws import V1, KernelWS, encode_v1_parts, make_msg

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="cellgate-only fuzzing")

WS_NAME = "default"
SENTINEL = "keep/sentinel.txt"  # the fuzzing never names keep/: nothing may change it
TARGET = "target.txt"  # a plain file the fuzzing may address
SENTINEL_BYTES = b"written before the fuzzing; must never change\n"
CANARY_BYTES = b"outside every workspace; must never change\n"
DEEP = 100_000  # levels: far past any stack that copies or dumps one tree level per call
MCP_JSON = {"Content-Type": "application/json", "Accept": "application/json"}


class Gw:
    """The server under test plus the invariants checked after each case."""

    def __init__(self, t, kid, canary):
        self.t, self.kid, self.canary = t, kid, canary
        self.snap = None
        self.cases = 0

    # -- invariants
    def alive(self, label):
        rc = self.t.proc.poll()
        assert rc is None, "gateway died (rc=%s) after %s\n%s" % (rc, label, self.t.log_tail())

    def check(self, label, r, method="GET", mcp=False):
        """One HTTP answer to hostile input: no 500, and an error is a JSON body with reason and message."""
        self.cases += 1
        self.alive(label)
        code = r.status_code
        # 501: jupyter_server's answer to a session naming an unknown kernelspec.
        assert code < 500 or code in (501, 503, 504), "%s -> %d %r" % (label, code, r.text[:300])
        if code < 400 or method == "HEAD":
            return
        try:
            body = r.json()
        except ValueError:
            raise AssertionError("%s -> %d with a non-JSON body %r" % (label, code, r.content[:200]))
        assert isinstance(body, dict), (label, body)
        if mcp and "error" in body:  # the MCP transport answers with JSON-RPC error objects
            assert isinstance(body["error"].get("message"), str), (label, body)
        else:
            assert isinstance(body.get("reason"), str) and isinstance(body.get("message"), str), (label, code, body)

    def serving(self, label):
        self.alive(label)
        r = self.t.get("api", timeout=30)
        assert r.status_code == 200, (label, r.status_code, r.text[:200])

    def intact(self, label):
        """The heavier checkpoint: a kernel executes, stored files are unchanged."""
        self.serving(label)
        out = self.execute("6*7")
        assert out.get("status") == "ok" and "42" in json.dumps(out.get("outputs")), (label, out)
        r = self.t.get("api/workspaces/%s/files/%s" % (WS_NAME, SENTINEL))
        assert r.status_code == 200 and r.content == SENTINEL_BYTES, (label, r.status_code, r.content[:100])
        with open(self.canary, "rb") as f:
            assert f.read() == CANARY_BYTES, "file outside the workspace changed after " + label
        assert os.path.isfile(self.canary) and not os.path.islink(self.canary), label

    # -- helpers
    def execute(self, code, kid=None):
        r = self.t.post("api/kernels/%s/execute" % (kid or self.kid), json={"code": code, "timeout": 60})
        assert r.status_code == 200, (r.status_code, r.text[:300])
        return r.json()

    def send(self, method, path, label=None, mcp=False, **kw):
        timeout = kw.pop("timeout", 60)
        label = label or "%s %s" % (method, path[:120])
        mcp = mcp or path.startswith("mcp")
        try:
            # The path goes out as given: requests would resolve dot segments and quote other bytes.
            prepared = self.t.http.prepare_request(requests.Request(method, self.t.url, **kw))
            prepared.url = self.t.url + requests.utils.quote(path, safe="/%?&=+~:@!$'()*,;")
            r = self.t.http.send(prepared, timeout=timeout)
        except requests.RequestException as e:
            try:  # a dropped connection is often the gateway dying: say so if it did
                self.t.proc.wait(5)
            except Exception:
                pass
            self.alive(label)
            raise AssertionError("%s: no HTTP answer: %r" % (label, e))
        self.check(label, r, method, mcp=mcp)
        return r


@pytest.fixture(scope="module")
def gw():
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    t = targets_mod.make_target("cellgate", extra_args=["--max-body", "4M"])
    t.start()
    try:
        kid = t.start_kernel()["id"]
        canary = os.path.join(t.tmp, "outside", "canary.txt")
        os.makedirs(os.path.dirname(canary))
        with open(canary, "wb") as f:
            f.write(CANARY_BYTES)
        g = Gw(t, kid, canary)
        assert g.execute("import os; os.makedirs('keep'); open(%r, 'w').write('target')" % TARGET)["status"] == "ok"
        r = t.api("PUT", "api/workspaces/%s/files/%s" % (WS_NAME, SENTINEL), data=SENTINEL_BYTES)
        assert r.status_code == 201, r.text
        # A hostile kernel's additions: symlinks out of the workspace (to the canary's host path, to
        # its directory, to / and ..), a symlink loop, a FIFO, a directory.
        code = "\n".join([
            "import os",
            "os.makedirs('d/e', exist_ok=True)",
            "for name, target in [('canary_link', %r), ('outside_dir', %r), ('root_link', '/'),"
            " ('up', '..'), ('d/up2', '../..'), ('loop', 'loop'), ('dangling', '/nonexistent/x')]:" % (
                canary, os.path.dirname(canary)),
            "    os.symlink(target, name)",
            "os.mkfifo('fifo')",
            # Names that need escaping in manifests, JSON and tar, and a tree deeper than the scan limit.
            "os.makedirs(b'odd')",
            "for n in [b'new\\nline', b'\\xff\\xfe', b'tab\\there', b'%25', b'%', b'sp ace', b'x' * 255, b'\\x7f',"
            " b'a\\rb', b'checksum x', b'\\xc3\\xa9']:",
            "    open(b'odd/' + n, 'wb').write(n)",
            "os.symlink(b'\\xff/\\n..', b'odd/lnk')",
            "here = os.getcwd()",
            "os.makedirs('deep'); os.chdir('deep')",
            "for i in range(300):",
            "    os.mkdir('d'); os.chdir('d')",
            "open('f', 'w').write('deep'); os.chdir(here)",
            "print('ok')",
        ])
        out = g.execute(code)
        assert out["status"] == "ok", out
        r = t.post("api/workspaces/%s/snapshots" % WS_NAME, json={"label": "fuzz-base"})
        assert r.status_code == 201, r.text
        g.snap = r.json()["id"]
        g.intact("setup")
        yield g
    finally:
        t.stop()


# ------------------------------------------------------------------------- REST: routes x methods

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "FOO"]
ROUTES = [
    "", "api", "api/", "api/status", "api/me", "api/nothing", "api/kernelspecs", "api/kernelspecs/{spec}",
    "api/kernelspecs/{spec}/x", "kernelspecs/{spec}/logo-64x64.png", "kernelspecs/{spec}/kernel.json",
    "kernelspecs/{spec}", "api/kernels", "api/kernels/{kid}", "api/kernels/{kid}/interrupt",
    "api/kernels/{kid}/execute", "api/kernels/{kid}/tools/{tool}", "api/kernels/{kid}/tools",
    "api/kernels/{kid}/channels", "api/kernels/{kid}/a/b/c", "api/sessions", "api/sessions/{sid}",
    "api/sessions/{sid}/x", "api/workspaces", "api/workspaces/{ws}", "api/workspaces/{ws}/files",
    "api/workspaces/{ws}/files/{file}", "api/workspaces/{ws}/diff", "api/workspaces/{ws}/snapshots",
    "api/workspaces/{ws}/snapshots/{snap}", "api/workspaces/{ws}/snapshots/{snap}/restore",
    "api/workspaces/{ws}/snapshots/{snap}/archive", "api/workspaces/{ws}/snapshots/{snap}/x", "api/workspaces/{ws}/x",
    "mcp", "mcp/x",
]
BAD_IDS = ["", "x", "..", ".", "%2e%2e", "%2E%2E%2F%2E%2E", "%00", "a%00b", "%ff%fe", "%C3%A9", "\u00e9\u4e2d",
           "%", "%zz", "%2F", "a%2Fb", "x" * 5000, "00000000-0000-0000-0000-000000000000", "%20", "+", "~",
           "%25", "..%2F..%2Fetc%2Fpasswd", "%E2%80%AE", "con", "a" * 65, "-", "a\u0301"]
JUNK_BODIES = [None, b"{", b"[]", b"null", b"1", b'"s"', b"{}", b'{"name": 5}', b"\xff\xfe", b"{\"a\":\x00}",
               b'{"code": 1}', b'{"path": []}', b'{"kernel": "x"}']


def fill(route, g, rng, mutate):
    real = {"spec": "cgtest", "kid": g.kid, "tool": rng.choice(["read", "write", "edit", "exec", "process", "nope"]),
            "sid": str(uuid.UUID(int=rng.getrandbits(128))), "ws": WS_NAME, "file": TARGET, "snap": g.snap}
    used, out = {}, route
    for key, value in real.items():
        if "{%s}" % key in out:
            if mutate and rng.random() < 0.6:
                value = rng.choice(BAD_IDS + [value + rng.choice(BAD_IDS), value.upper()])
            used[key] = value
            out = out.replace("{%s}" % key, value)
    return out, used


def test_every_route_and_method(gw):
    rng = random.Random(1001)
    made = []
    for i in range(420):
        method = METHODS[i % len(METHODS)]
        route = ROUTES[(i // len(METHODS)) % len(ROUTES)]
        path, used = fill(route, gw, rng, mutate=i >= len(METHODS) * len(ROUTES))
        # Nothing the fixture relies on is deleted, restarted or overwritten on purpose.
        real = {k: v for k, v in used.items() if v in (gw.kid, WS_NAME, gw.snap)}
        if method in ("DELETE", "PUT", "PATCH") and real:
            continue
        body = rng.choice(JUNK_BODIES)
        if route == "api/kernels" and method == "POST" and body in (None, b"{}"):
            body = b'{"name": "no-such-kernelspec"}'
        if method == "POST" and ("restore" in route or "tools" in route) and real:
            body = b"[]"
        if rng.random() < 0.2:
            path += "?" + rng.choice(["token=", "owner=..", "from=%00&to=x", "recursive=true", "a=" + "b" * 3000,
                                      "%ff=%fe", "&&&", "session_id=" + "x" * 300])
        r = gw.send(method, path, data=body, label="case %d: %s /%s" % (i, method, path[:100]))
        if r.status_code == 201 and route == "api/kernels":
            made.append(r.json()["id"])
        if i % 60 == 59:
            gw.intact("route case %d" % i)
    for kid in made:
        gw.t.delete_kernel(kid)
    gw.intact("routes")


# --------------------------------------------------------------------------- REST: JSON bodies

def deep(kind, depth=DEEP):
    return ("[" * depth + "]" * depth) if kind == "a" else ('{"a":' * depth + "1" + "}" * depth)


JSON_ENDPOINTS = [
    # (method, path, a valid body as a template)
    ("POST", "api/kernels", {"name": "no-such-kernelspec", "env": {"A": "b"}, "workspace": "w", "ephemeral": False}),
    ("POST", "api/sessions", {"path": "p.ipynb", "name": "n", "type": "notebook",
                              "kernel": {"name": "no-such-kernelspec", "env": {}}}),
    ("POST", "api/workspaces", {"name": "fuzz-ws"}),
    ("POST", "api/workspaces/%s/snapshots" % WS_NAME, {"label": "fuzz"}),
    ("POST", "api/workspaces/%s/snapshots/{snap}/restore" % WS_NAME, {"to": "fuzz-fork"}),
    ("POST", "api/kernels/{kid}/execute", {"code": "1", "timeout": 10, "env": {"A": "b"}}),
    ("POST", "api/kernels/{kid}/tools/read", {"path": TARGET, "offset": 0, "limit": 3}),
    ("POST", "api/kernels/{kid}/tools/write", {"path": "fz/w.txt", "content": "x"}),
    ("POST", "api/kernels/{kid}/tools/edit", {"path": "fz/w.txt", "old_string": "x", "new_string": "y"}),
    ("POST", "api/kernels/{kid}/tools/exec", {"code": "1"}),
    ("POST", "api/kernels/{kid}/tools/process", {"command": "true", "args": ["a"], "timeout": 5, "stdin": ""}),
]
WRONG_VALUES = [None, True, 0, -1, 1.5, 1e308, 2 ** 64, -(2 ** 63) - 1, "", "x" * 70000, "\u0000", "\ud800",
                [], [1, "a"], {}, {"a": {"b": []}}, "../../etc/passwd", "/etc/passwd", "/workspace/../x"]


def mutate_body(rng, template):
    body = json.loads(json.dumps(template))
    keys = list(body) + ["extra", "__proto__"]
    for _ in range(rng.randint(1, 3)):
        key = rng.choice(keys)
        if rng.random() < 0.15:
            body.pop(key, None)
        else:
            body[key] = rng.choice(WRONG_VALUES)
    return body


def encode_body(rng, body):
    """JSON text for body, sometimes damaged: truncated, invalid UTF-8, a duplicate key, a deep value."""
    text = json.dumps(body, allow_nan=True).encode()
    roll = rng.random()
    if roll < 0.08:
        return text[: rng.randint(0, len(text))]
    if roll < 0.14:
        at = rng.randint(0, len(text))
        return text[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]) + text[at:]
    if roll < 0.18 and text.startswith(b"{") and len(text) > 2:
        return b'{"a": 1, "a": [2],' + text[1:]
    if roll < 0.22:
        return text.replace(b"1", b"1e999", 1) if b"1" in text else b"NaN"
    return text


def test_json_bodies(gw):
    rng = random.Random(2002)
    for i in range(330):
        method, path, template = JSON_ENDPOINTS[i % len(JSON_ENDPOINTS)]
        path = path.replace("{kid}", gw.kid).replace("{snap}", gw.snap)
        data = encode_body(rng, mutate_body(rng, template))
        if "restore" in path and b'"to"' not in data:
            data = b"[]"  # a restore in place is legitimate; only forks and refusals here
        r = gw.send(method, path, data=data, label="case %d: %s %s %r" % (i, method, path, data[:80]))
        if r.status_code == 201 and path == "api/kernels":
            gw.t.delete_kernel(r.json()["id"])
        if i % 55 == 54:
            gw.intact("body case %d" % i)
    gw.intact("bodies")


def test_deeply_nested_bodies(gw):
    """A small body that nests 100k levels deep, wherever a JSON body is read (a stack overflow before)."""
    endpoints = [(m, p.replace("{kid}", gw.kid).replace("{snap}", gw.snap)) for m, p, _ in JSON_ENDPOINTS]
    endpoints.append(("PATCH", "api/sessions/00000000-0000-0000-0000-000000000000"))
    for method, path in endpoints:
        for kind in "ao":
            for field in ("env", "name", "x", "code", "path", "content", "args", "kernel", "label", "to"):
                data = '{"%s": %s}' % (field, deep(kind))
                gw.send(method, path, data=data, label="%s %s deep %s in %s" % (method, path, kind, field))
            gw.send(method, path, data=deep(kind), label="%s %s deep %s body" % (method, path, kind))
        gw.serving(path)
    # Just under the bound is accepted as JSON (the refusal is about depth, not about nesting at all).
    r = gw.send("POST", "api/kernels/%s/execute" % gw.kid, data='{"code": "1", "x": %s}' % deep("a", 400))
    assert r.status_code == 200, r.text[:200]
    gw.intact("deep bodies")


def test_deeply_nested_kernel_output(gw):
    """A kernel (hostile code) sends a display_data whose content nests 100k levels deep."""
    code = "\n".join([
        "k = get_ipython().kernel",
        "d = %d" % DEEP,
        "body = b'{\"data\": {\"application/json\": ' + b'[' * d + b']' * d + b'}, \"metadata\": {}}'",
        "k.session.send(k.iopub_socket, 'display_data', content=body, parent=k.get_parent('shell'))",
        "print('sent')",
    ])
    out = gw.execute(code)
    assert out["status"] == "ok", out
    assert "sent" in json.dumps(out["outputs"]), out
    gw.intact("deep kernel output")


# ------------------------------------------------------------------------------ tool arguments

def test_tool_argument_edges(gw):
    tools = "api/kernels/%s/tools/" % gw.kid
    r = gw.send("POST", tools + "write", json={"path": "fz/lines.txt", "content": "l1\nl2\nl3\n"})
    assert r.status_code == 200, r.text
    big = [0, 1, 2, 3, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 2, 2 ** 64 - 1, 2 ** 64, -1, 1.0, 1.5]
    for offset in big:
        for limit in big:
            r = gw.send("POST", tools + "read", json={"path": "fz/lines.txt", "offset": offset, "limit": limit})
            if r.status_code != 200:
                continue
            body = r.json()
            want = "".join("l%d\n" % n for n in range(1, 4))[3 * offset:3 * min(3, offset + limit)] if offset < 3 else ""
            assert body["content"] == want, (offset, limit, body)
            assert body["truncated"] == (offset + limit < 3), (offset, limit, body)
    # Hunk headers with numbers past every integer type: a 400 or 409, not an exception (500).
    for header in ["@@ -99999999999999999999999,1 +1 @@", "@@ -18446744073709551615,1 +1 @@",
                   "@@ -9223372036854775807,1 +1 @@", "@@ --1,1 +1 @@", "@@ -0,0 +0,0 @@", "@@ -+1 +1 @@"]:
        r = gw.send("POST", tools + "edit", json={"path": "fz/lines.txt", "diff": header + "\n-l1\n+L1\n"})
        assert r.status_code in (200, 400, 409), (header, r.status_code, r.text)
    # NUL cannot reach execve: refused rather than silently cut short.
    for body in ({"command": "ech\u0000o"}, {"command": "echo", "args": ["a\u0000b"]}):
        r = gw.send("POST", tools + "process", json=body)
        assert r.status_code == 400, (body, r.text)
    # Variables os.environ refuses would make the set-up cell fail and the code run without its env.
    for env in ({"": "x"}, {"A=B": "x"}, {"A": "x\u0000y"}, {"A\u0000": "x"}):
        r = gw.send("POST", "api/kernels/%s/execute" % gw.kid, json={"code": "1", "env": env})
        assert r.status_code == 400, (env, r.text)
    out = gw.t.post("api/kernels/%s/execute" % gw.kid,
                    json={"code": "import os; print(os.environ['FZ_A'])", "env": {"FZ_A": "set"}}).json()
    assert out["status"] == "ok" and "set" in json.dumps(out["outputs"]), out
    gw.intact("tool arguments")


# ----------------------------------------------------------------------- workspace paths, symlinks

ESCAPES = ["canary_link", "outside_dir/canary.txt", "root_link/etc/passwd", "up/up/etc/passwd", "d/up2/x",
           "loop", "loop/x", "dangling", "fifo", "d", "d/e", "..", "../x", "/etc/passwd", "//etc/passwd",
           "%2e%2e/x", "%2E%2E%2Fx", "d/%2e%2e/%2e%2e/x", "a%00b", "%00", "%ff%fe", "x" * 256, "/".join(["d"] * 2100),
           "./" + TARGET, TARGET + "/", TARGET + "/x", "\u00e9\u4e2d.txt", "%C0%AE%C0%AE/x", "d//e", " ", ".",
           "/workspace/../x", "/workspace/canary_link", "/workspace/" + TARGET + "/.."]


def test_workspace_paths_and_kernel_symlinks(gw):
    rng = random.Random(3003)
    files = "api/workspaces/%s/files/" % WS_NAME
    tools = "api/kernels/%s/tools/" % gw.kid
    for i in range(300):
        p = ESCAPES[i % len(ESCAPES)]
        if i >= len(ESCAPES):
            p = rng.choice(ESCAPES) + rng.choice(["", "/", "/x", "/..", "%2F..%2F..", "/" + TARGET])
        quoted = p if "%" in p else requests.utils.quote(p, safe="/")
        op = i % 8
        label = "case %d op %d %r" % (i, op, p[:80])
        if op == 0:
            r = gw.send("GET", files + quoted, label=label)
            assert CANARY_BYTES not in r.content and b"root:" not in r.content, label
        elif op == 1:
            gw.send("PUT", files + quoted, data=b"fuzz", label=label)
        elif op == 2:
            gw.send("DELETE", files + quoted + rng.choice(["", "?recursive=true"]), label=label)
        elif op == 3:
            r = gw.send("POST", tools + "read", json={"path": p}, label=label)
            assert CANARY_BYTES.decode() not in r.text and "root:" not in r.text, label
        elif op == 4:
            gw.send("POST", tools + "write", json={"path": p, "content": "fuzz"}, label=label)
        elif op == 5:
            gw.send("POST", tools + "edit", json={"path": p, "old_string": "outside", "new_string": "pwned",
                                                  "replace_all": True}, label=label)
        elif op == 6:
            gw.send("POST", tools + "edit", json={"path": p, "diff": rng.choice([
                "--- a\n+++ b\n@@ -1 +1 @@\n-outside every workspace; must never change\n+pwned\n",
                "@@ -999999999999999999999,1 +1 @@\n", "@@ @@\n", "garbage", "\x00"])}, label=label)
        else:
            r = gw.send("GET", "api/workspaces/%s/diff?from=%s&to=%s" % (
                WS_NAME, rng.choice([gw.snap, p, "", "00000001-00000000", "99999999-ffffffff"]),
                rng.choice([gw.snap, p, "%00", "../../x"])), label=label)
        if i % 50 == 49:
            gw.intact(label)
    # Snapshot ids: made up, malformed, traversal.
    for sid in [gw.snap, "99999999-ffffffff", "00000000-00000000", gw.snap.upper(), gw.snap + "0", "..",
                "%2e%2e%2Fhead", "head", "index", "x" * 300, "%00", "lock"]:
        base = "api/workspaces/%s/snapshots/%s" % (WS_NAME, sid)
        gw.send("GET", base)
        gw.send("GET", base + "/archive")
        gw.send("POST", base + "/restore", json={"to": rng.choice(["..", "fuzz-fork-" + str(rng.randint(0, 9)),
                                                                    WS_NAME, "a/b", "", 5])})
    # The kernel swaps a directory and a file of a snapshot for symlinks out of the workspace; restoring
    # the snapshot replaces the links and writes nothing outside.
    outside = os.path.dirname(gw.canary)
    assert gw.execute("import os; os.makedirs('sw/e', exist_ok=True); open('sw/e/f.txt', 'w').write('in');"
                      " open('sw.txt', 'w').write('t')")["status"] == "ok"
    r = gw.send("POST", "api/workspaces/%s/snapshots" % WS_NAME, json={"label": "swap"})
    assert r.status_code == 201, r.text
    swap = r.json()["id"]
    assert gw.execute("import os, shutil; shutil.rmtree('sw'); os.symlink(%r, 'sw'); os.remove('sw.txt');"
                      " os.symlink(%r, 'sw.txt')" % (outside, gw.canary))["status"] == "ok"
    r = gw.send("POST", "api/workspaces/%s/snapshots/%s/restore" % (WS_NAME, swap), json={})
    assert r.status_code == 200, r.text
    assert sorted(os.listdir(outside)) == ["canary.txt"], os.listdir(outside)
    out = gw.execute("import os; print(os.path.islink('sw'), open('sw/e/f.txt').read(), os.path.islink('sw.txt'))")
    assert "False in False" in json.dumps(out["outputs"]), out
    # A snapshot and a restore in place of a tree full of hostile entries stay inside it.
    r = gw.send("POST", "api/workspaces/%s/snapshots" % WS_NAME, json={})
    assert r.status_code == 201, r.text
    r = gw.send("POST", "api/workspaces/%s/snapshots/%s/restore" % (WS_NAME, gw.snap), json={})
    assert r.status_code == 200, r.text
    r = gw.send("GET", "api/workspaces/%s/snapshots/%s/archive" % (WS_NAME, gw.snap))
    assert r.status_code == 200 and CANARY_BYTES not in r.content
    names = tarfile.open(fileobj=io.BytesIO(r.content)).getnames()
    assert "odd/new\nline" in names and SENTINEL in names, names[:40]
    r = gw.send("GET", "api/workspaces/%s/snapshots/%s" % (WS_NAME, gw.snap))
    assert r.status_code == 200 and "odd/tab\there" in [e["path"] for e in r.json()["entries"]]
    gw.intact("paths")


# -------------------------------------------------------------------------------- raw HTTP/1.1

def raw_exchange(gw, payload, half_close=True, timeout=30):
    """Send bytes on a fresh connection (then EOF), return everything the server answered."""
    host, port = gw.t.url.split("//")[1].rstrip("/").split(":")
    s = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        s.close()


def parse_responses(data):
    """HTTP/1.1 responses with Content-Length bodies, in order: [(status, headers, body)]."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep, "truncated response head %r" % data[:200]
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get(b"content-length", b"0"))
        out.append((status, headers, rest[:n]))
        data = rest[n:]
    return out


def check_raw(gw, label, data, expect=None):
    gw.cases += 1
    gw.alive(label)
    responses = parse_responses(data)
    for status, _, body in responses:
        assert status < 500, (label, status, body[:200])
        if status >= 400:
            try:
                j = json.loads(body)
            except ValueError:
                raise AssertionError("%s -> %d with a non-JSON body %r" % (label, status, body[:200]))
            assert isinstance(j.get("reason"), str) and isinstance(j.get("message"), str), (label, j)
    if expect is not None:
        assert [s for s, _, _ in responses] == expect, (label, data[:600])
    return responses


def req(method="GET", target="/api", version=b"HTTP/1.1", headers=(), body=b"", auth=True, gwt=None):
    lines = [method.encode() + b" " + (target if isinstance(target, bytes) else target.encode()) + b" " + version,
             b"Host: 127.0.0.1"]
    if auth:
        lines.append(b"Authorization: token " + gwt.token.encode())
    lines += [h if isinstance(h, bytes) else h.encode() for h in headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def test_raw_http(gw):
    t = gw.t
    R = lambda *a, **kw: req(*a, gwt=t, **kw)  # noqa: E731
    ok = R()
    cases = [
        ("garbage", b"GARBAGE\r\n\r\n", None),
        ("http/0.9", b"GET /\r\n\r\n", None),
        ("version 0.9", R(version=b"HTTP/0.9"), None),
        ("version 2.0", R(version=b"HTTP/2.0"), None),
        ("version 1.2", R(version=b"HTTP/1.2"), None),
        ("version junk", R(version=b"HTTP/1.1x"), None),
        ("blank lines", b"\r\n\r\n\r\n", None),
        ("bare LF", ok.replace(b"\r\n", b"\n"), None),
        ("lowercase method", R(method="get"), None),
        ("unknown method", R(method="BREW"), None),
        ("two spaces", ok.replace(b"GET /api", b"GET  /api"), None),
        ("asterisk", R(target="*"), None),
        ("absolute form", R(target="http://127.0.0.1/api"), None),
        ("double slash", R(target="//api//kernels//"), [200]),
        ("bare percent", R(target="/api/kernels/%"), [404]),
        ("nul percent", R(target="/api/kernels/%00"), [404]),
        ("invalid utf8 id", R(target="/api/kernels/%ff%fe%fd"), [404]),
        ("raw high bytes", R(target=b"/api/kernels/\xff\xfe"), None),
        ("long target", R(target="/api/kernels/" + "a" * 30000), [404]),
        ("long query", R(target="/api?" + "a=b&" * 8000), [200]),
        ("fragment", R(target="/api#x"), None),
        ("no host", ok.replace(b"Host: 127.0.0.1\r\n", b""), [400]),  # RFC 9112 3.2
        ("two hosts", R(headers=["Host: 127.0.0.2"]), [400]),
        ("header no colon", R(headers=["NoColonHere"]), None),
        ("header space name", R(headers=["Bad Name: x"]), None),
        ("obs-fold", R(headers=["X-A: a", " continued"]), None),
        ("nul in header", R(headers=[b"X-A: a\x00b"]), None),
        ("high bytes in header", R(headers=[b"X-A: \xff\xfe"]), None),
        ("many headers", R(headers=["X-%d: v" % i for i in range(3000)]), None),
        ("two auth headers", R(headers=["Authorization: token wrong"]), None),
        ("cl short", R(method="POST", target="/api/sessions", headers=["Content-Length: 100"], body=b"{}"), None),
        ("cl negative", R(method="POST", target="/api/sessions", headers=["Content-Length: -1"], body=b"{}"), None),
        ("cl junk", R(method="POST", target="/api/sessions", headers=["Content-Length: 1x"], body=b"{}"), None),
        ("cl huge", R(method="POST", target="/api/sessions", headers=["Content-Length: 99999999999999999999999"]),
         None),
        ("cl twice", R(method="POST", target="/api/sessions", headers=["Content-Length: 2", "Content-Length: 3"],
                       body=b"{}x"), None),
        ("cl and te", R(method="POST", target="/api/sessions",
                        headers=["Content-Length: 2", "Transfer-Encoding: chunked"], body=b"2\r\n{}\r\n0\r\n\r\n"),
         None),
        ("chunk bad size", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: chunked"],
                             body=b"zz\r\n{}\r\n0\r\n\r\n"), None),
        ("chunk huge size", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: chunked"],
                              body=b"ffffffffffffffffff\r\n{}\r\n0\r\n\r\n"), None),
        ("chunk no end", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: chunked"],
                           body=b"2\r\n{}\r\n"), None),
        ("chunk ext", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: chunked"],
                        body=b"2;" + b"x" * 5000 + b"\r\n{}\r\n0\r\n\r\n"), None),
        ("chunk trailer", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: chunked"],
                            body=b"2\r\n{}\r\n0\r\nX-T: 1\r\n\r\n"), None),
        ("te gzip", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: gzip, chunked"],
                      body=b"2\r\n{}\r\n0\r\n\r\n"), [400]),
        # Chunked not last: the body has no framing, so "{}" must not be read as a second request.
        ("te unknown", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: bogus"], body=b"{}"),
         [400]),
        ("te twice", R(method="POST", target="/api/sessions", headers=["Transfer-Encoding: chunked",
                                                                       "Transfer-Encoding: identity"],
                       body=b"2\r\n{}\r\n0\r\n\r\n"), [400]),
        ("pipelined", ok * 3, [200, 200, 200]),
        ("pipelined bad middle", ok + b"GARBAGE\r\n\r\n" + ok, None),
        ("pipelined post", R(method="POST", target="/api/sessions", headers=["Content-Length: 2"], body=b"[]") + ok,
         [400, 200]),
        ("upgrade without key", R(target="/api/kernels/%s/channels" % gw.kid,
                                  headers=["Connection: Upgrade", "Upgrade: websocket"]), None),
        ("upgrade bad version", R(target="/api/kernels/%s/channels" % gw.kid,
                                  headers=["Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 99",
                                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]), None),
        ("upgrade elsewhere", R(target="/api/kernels", headers=[
            "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]), [404]),
        ("upgrade no auth", R(target="/api/kernels/%s/channels" % gw.kid, auth=False, headers=[
            "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]), [401]),
        ("ndjson execute bad body", R(method="POST", target="/api/kernels/%s/execute" % gw.kid,
                                      headers=["Accept: application/x-ndjson", "Content-Length: 1"], body=b"{"),
         [400]),
        ("ndjson execute deep", R(method="POST", target="/api/kernels/%s/execute" % gw.kid,
                                  headers=["Accept: application/x-ndjson", "Content-Length: %d" % (2 * DEEP + 20)],
                                  body=b'{"code":"1","x":' + deep("a").encode() + b"}"), [400]),
        ("ndjson execute unknown kernel", R(method="POST", target="/api/kernels/%ff/execute",
                                            headers=["Accept: application/x-ndjson"]), [404]),
    ]
    rng = random.Random(4004)
    for i in range(60):  # random byte damage to a valid request
        b = bytearray(R(method="POST", target="/api/kernels/%s/tools/read" % gw.kid,
                        headers=["Content-Length: 20"], body=b'{"path": "sentinel"}'))
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        cases.append(("damaged %d" % i, bytes(b), None))
    for label, payload, expect in cases:
        data = raw_exchange(gw, payload)
        check_raw(gw, label, data, expect)
        gw.serving(label)
    # A response to HEAD has no body: the next response on the connection starts right after its head.
    for target in ("/api/kernelspecs", "/api", "/api/nothing"):
        data = raw_exchange(gw, R(method="HEAD", target=target) + ok)
        head, sep, rest = data.partition(b"\r\n\r\n")
        assert sep and rest.startswith(b"HTTP/1.1 200"), ("HEAD " + target, data[:400])
        check_raw(gw, "after HEAD " + target, rest, [200])
    gw.intact("raw http")


def test_partial_requests_do_not_block_others(gw):
    """Slowloris: connections holding half a request while other clients are served."""
    host, port = gw.t.url.split("//")[1].rstrip("/").split(":")
    held = []
    try:
        for i in range(30):
            s = socket.create_connection((host, int(port)), timeout=30)
            s.sendall([b"GET /api HTTP/1.1\r\nHost: x\r\nX-Slow: ", b"POST /api/sessions HTTP/1.1\r\n"
                       b"Content-Length: 1000\r\n\r\n{", b"G", b"\x16\x03\x01"][i % 4])
            held.append(s)
        for i in range(20):
            gw.serving("slowloris %d" % i)
        gw.intact("slowloris")
    finally:
        for s in held:
            s.close()


# ---------------------------------------------------------------------------------- WebSockets

def ws_open(gw, protocol):
    return KernelWS(gw.t.url, gw.t.token, gw.kid, protocol=protocol, timeout=30)


def ws_still_works(gw, label):
    """A fresh connection's kernel_info_request is answered (kernel, hub and gateway are fine)."""
    gw.alive(label)
    c = ws_open(gw, "legacy")
    try:
        msg_id = c.send("shell", "kernel_info_request", {})
        c.wait_for(lambda m: (m.get("parent_header") or {}).get("msg_id") == msg_id
                   and m["header"]["msg_type"] == "kernel_info_reply", timeout=30)
    finally:
        c.close()


def legacy_payloads(rng, session):
    """Text frames: damaged JSON messages; the msg_types are never ones a kernel acts on."""
    good = make_msg("fuzz_request", {}, "shell", session)
    out = []
    for _ in range(120):
        m = json.loads(json.dumps(good))
        for _ in range(rng.randint(1, 3)):
            where = rng.choice(["top", "header"])
            obj = m if where == "top" else (m["header"] if isinstance(m.get("header"), dict) else m)
            key = rng.choice(["header", "msg_type", "msg_id", "channel", "content", "metadata", "parent_header",
                              "buffers", "session", "x"])
            val = rng.choice([None, 1, "", "iopub", "nope", "control", [], {}, "x" * 5000, True, [1, 2]])
            if key == "msg_type" and isinstance(val, str) and val:
                val = "fuzz_" + val[:10]
            obj[key] = val
        text = json.dumps(m).encode()
        roll = rng.random()
        if roll < 0.1:
            text = text[: rng.randint(0, len(text))]
        elif roll < 0.15:
            text = b'{"header": ' + deep("o", 20000).encode() + b"}"
        out.append(text.decode("utf-8", "replace"))
    return out


def v1_payloads(rng):
    out = []
    header = json.dumps({"msg_id": "m", "msg_type": "fuzz_request", "session": "s", "username": "u",
                         "version": "5.3", "date": ""}).encode()
    parts = [header, b"{}", b"{}", b"{}"]
    for _ in range(120):
        chan = rng.choice([b"shell", b"control", b"stdin", b"iopub", b"", b"\xff", b"x" * 300])
        frame = bytearray(encode_v1_parts("shell", parts))
        kind = rng.randrange(7)
        if kind == 0:  # random offsets
            n = struct.unpack("<Q", bytes(frame[:8]))[0]
            i = rng.randrange(n + 1)
            frame[8 * i:8 * i + 8] = struct.pack("<Q", rng.choice([0, 1, 2 ** 63, 2 ** 64 - 1, len(frame),
                                                                    len(frame) + 1, rng.randrange(200)]))
        elif kind == 1:  # huge or tiny part count
            frame[0:8] = struct.pack("<Q", rng.choice([0, 1, 5, 7, 2 ** 32, 2 ** 61, 2 ** 64 - 1]))
        elif kind == 2:  # parts that are not objects
            bad = [rng.choice([b"", b"[]", b"1", b"{", b"\xff", deep("o", 20000).encode(), b'{"a":1}x'])
                   for _ in range(4)]
            frame = bytearray(encode_v1_parts("shell", [header] + bad[1:]) if rng.random() < 0.5
                              else encode_v1_parts("shell", bad))
        elif kind == 3:
            frame = bytearray(frame[: rng.randrange(len(frame))])
        elif kind == 4:  # the channel
            n = 6
            body = chan + b"".join(parts)
            offs = [8 * (n + 1), 8 * (n + 1) + len(chan)]
            for p in parts:
                offs.append(offs[-1] + len(p))
            frame = bytearray(struct.pack("<%dQ" % (n + 1), n, *offs) + body)
        elif kind == 5:  # header without msg_type / msg_id, wrong types
            h = rng.choice([b"{}", b'{"msg_type": 1}', b'{"msg_id": [], "msg_type": "fuzz"}',
                            b'{"msg_type": "fuzz_x", "msg_id": null}'])
            frame = bytearray(encode_v1_parts("shell", [h] + parts[1:]))
        else:
            for _ in range(rng.randint(1, 6)):
                frame[rng.randrange(len(frame))] = rng.randrange(256)
        out.append(bytes(frame))
    return out


def legacy_binary_payloads(rng):
    out = []
    js = json.dumps(make_msg("fuzz_request", {}, "shell", "s")).encode()
    for _ in range(60):
        nbufs = rng.choice([0, 1, 2, 3, 2 ** 31, 2 ** 32 - 1])
        offs = [rng.choice([0, 4, 8, 12, 16, 2 ** 31, 2 ** 32 - 1, rng.randrange(64)]) for _ in range(min(nbufs, 4))]
        head = struct.pack("!I", nbufs) + b"".join(struct.pack("!I", o) for o in offs)
        out.append(head + js[: rng.randrange(len(js) + 1)])
    return out


def test_websocket_payloads(gw):
    rng = random.Random(5005)
    for protocol in ("legacy", "v1"):
        c = ws_open(gw, protocol)
        frames = []
        if protocol == "legacy":
            frames += [(websocket.ABNF.OPCODE_TEXT, p) for p in legacy_payloads(rng, c.session_id)]
            frames += [(websocket.ABNF.OPCODE_BINARY, p) for p in legacy_binary_payloads(rng)]
        else:
            frames += [(websocket.ABNF.OPCODE_BINARY, p) for p in v1_payloads(rng)]
            frames += [(websocket.ABNF.OPCODE_TEXT, p) for p in legacy_payloads(rng, c.session_id)[:20]]
        for i, (opcode, payload) in enumerate(frames):
            label = "%s ws frame %d %r" % (protocol, i, payload[:60])
            gw.cases += 1
            try:
                c.ws.send(payload, opcode=opcode)
            except (websocket.WebSocketException, OSError):
                c.close()
                gw.alive(label)
                c = ws_open(gw, protocol)
            if i % 40 == 39:
                gw.serving(label)
        c.close()
        ws_still_works(gw, protocol + " payloads")
    gw.intact("websocket payloads")


def ws_handshake(gw, protocol=None):
    host, port = gw.t.url.split("//")[1].rstrip("/").split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET /api/kernels/%s/channels?session_id=raw HTTP/1.1" % gw.kid, "Host: 127.0.0.1",
             "Authorization: token " + gw.t.token, "Connection: Upgrade", "Upgrade: websocket",
             "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: " + key]
    if protocol:
        lines.append("Sec-WebSocket-Protocol: " + protocol)
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(4096)
        assert b, "handshake: connection closed: %r" % head
        head += b
    assert head.startswith(b"HTTP/1.1 101"), head[:200]
    return s


def frame(opcode, payload, fin=True, mask=True, rsv=0, length=None):
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload) if length is None else length
    if n < 126 and length is None:
        head = struct.pack("!BB", b0, (0x80 if mask else 0) | n)
    elif n < 65536 and length is None:
        head = struct.pack("!BBH", b0, (0x80 if mask else 0) | 126, n)
    else:
        head = struct.pack("!BBQ", b0, (0x80 if mask else 0) | 127, n)
    if not mask:
        return head + payload
    key = b"\x01\x02\x03\x04"
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def test_websocket_frames(gw):
    """Frame-level abuse on a raw socket; the server closes or ignores, never falls over."""
    text = json.dumps(make_msg("fuzz_request", {}, "shell", "raw")).encode()
    cases = [
        ("unmasked", frame(1, text, mask=False)),
        ("rsv bits", frame(1, text, rsv=7)),
        ("reserved opcode 3", frame(3, b"x")),
        ("reserved opcode 0xb", frame(0xB, b"x")),
        ("long ping", frame(9, b"p" * 200)),
        ("fragmented ping", frame(9, b"p", fin=False)),
        ("continuation first", frame(0, b"x")),
        ("text in text", frame(1, text[:5], fin=False) + frame(1, text[5:])),
        ("ping between fragments", frame(1, text[:5], fin=False) + frame(9, b"") + frame(0, text[5:])),
        ("close 1 byte", frame(8, b"\x03")),
        ("close code 999", frame(8, struct.pack("!H", 999))),
        ("close code 1005", frame(8, struct.pack("!H", 1005))),
        ("close bad utf8", frame(8, struct.pack("!H", 1000) + b"\xff\xfe")),
        ("text bad utf8", frame(1, b'{"a": "\xff\xfe"}')),
        ("text overlong utf8", frame(1, b'"\xc0\xaf"')),
        ("surrogate utf8", frame(1, b'"\xed\xa0\x80"')),
        ("huge length", frame(2, b"", length=2 ** 63 - 1)),
        ("top bit length", frame(2, b"", length=2 ** 64 - 1)),
        ("non-minimal length", struct.pack("!BBQ", 0x81, 0x80 | 127, 2) + b"\0\0\0\0" + b"{}"),
        ("fragments then eof", frame(2, b"\x00" * 100, fin=False)),
        ("half header", b"\x81"),
        ("half mask", b"\x81\x85\x01\x02"),
        ("many small fragments", frame(1, b"{", fin=False) + b"".join(frame(0, b" ", fin=False) for _ in range(2000))
         + frame(0, b"}")),
        ("close then data", frame(8, struct.pack("!H", 1000)) + frame(1, text)),
        ("pong unsolicited", frame(10, b"x" * 125)),
        ("binary legacy table", frame(2, struct.pack("!II", 2 ** 31, 8) + text)),
    ]
    for protocol in (None, V1):
        for label, data in cases:
            label = "%s: %s" % (protocol or "legacy", label)
            gw.cases += 1
            s = ws_handshake(gw, protocol)
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
            except OSError:
                pass
            finally:
                s.close()
            gw.serving(label)
    ws_still_works(gw, "frames")
    gw.intact("websocket frames")


def test_client_text_cannot_forge_log_lines(gw):
    """A session_id (and an MCP client name) with a newline is quoted in warnings: it must stay one line."""
    c = KernelWS(gw.t.url, gw.t.token, gw.kid, session_id="fz%0AFORGED-WS%0D%0Aerror%20forged", timeout=30)
    try:
        c.ws.send("not json", opcode=websocket.ABNF.OPCODE_TEXT)  # logged as a dropped frame, with the session
    finally:
        c.close()
    r = gw.send("POST", "mcp", headers=MCP_JSON, data=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "clientInfo": {"name": "fz\nFORGED-MCP"}}}))
    assert r.status_code == 200, r.text
    ws_still_works(gw, "log lines")  # the gateway has handled the frame by the time this is answered
    with open(gw.t.log_path, errors="replace") as f:
        lines = f.read().splitlines()
    assert any("dropped client frame" in line and "FORGED-WS" in line for line in lines), lines[-20:]
    assert not [line for line in lines if line.startswith(("FORGED", "error forged"))], lines[-20:]


# ----------------------------------------------------------------------------------------- /mcp

def test_mcp_json_rpc(gw):
    rng = random.Random(6006)

    def post(body, headers=MCP_JSON, label=None):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return gw.send("POST", "mcp", data=data, headers=headers, mcp=True,
                       label=label or "mcp %r" % (data[:100] if isinstance(data, (str, bytes)) else data))

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "fuzz"}}}
    r = post(init)
    assert r.status_code == 200, r.text
    sid = r.headers["Mcp-Session-Id"]
    with_sid = dict(MCP_JSON, **{"Mcp-Session-Id": sid})
    fixed = [
        (b"", MCP_JSON), (b"{", MCP_JSON), (b"[]", with_sid), (b"null", with_sid), (b"1", with_sid),
        (json.dumps([init]), MCP_JSON), (json.dumps([init] * 65), MCP_JSON), (json.dumps(init), {}),
        (json.dumps(init), {"Content-Type": "text/plain"}), (json.dumps(init), {**MCP_JSON, "Accept": "text/html"}),
        (json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), MCP_JSON),
        (json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), dict(MCP_JSON, **{"Mcp-Session-Id": "x"})),
        (json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
         dict(MCP_JSON, **{"Mcp-Session-Id": "\u00e9".encode().decode("latin-1")})),
        ('{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "1", "x": %s}}'
         % deep("a"), MCP_JSON),
        ('[%s]' % deep("o"), with_sid),
        (b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"a": "\xff"}}', with_sid),
    ]
    for data, headers in fixed:
        post(data, headers=headers)
    tools = ["list_kernels", "start_kernel", "execute", "read", "write", "edit", "process", "snapshot", "restore",
             "nope", "", None, 5]
    values = [None, 1, -1, 1.5, "", "x" * 10000, [], {}, True, "../../etc/passwd", gw.kid, "/workspace/canary_link",
              2 ** 70]
    for i in range(260):
        m = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0", 2, None]),
             "id": rng.choice([i, str(i), None, 1.5, [], {}, True, -(2 ** 70)]),
             "method": rng.choice(["tools/call", "tools/call", "tools/list", "ping", "initialize", "nope", "", 7,
                                   "notifications/initialized", "notifications/cancelled"]),
             "params": rng.choice([{}, [], "x", None, 1,
                                   {"name": rng.choice(tools),
                                    "arguments": rng.choice([{}, [], "a", None] + [
                                        {k: rng.choice(values) for k in rng.sample(
                                            ["kernel_id", "code", "path", "content", "old_string", "new_string",
                                             "command", "args", "timeout", "workspace", "snapshot", "name",
                                             "offset", "limit"], rng.randint(1, 5))}])},
                                   {"cursor": rng.choice(values)}])}
        for key in ("id", "params", "jsonrpc", "method"):
            if rng.random() < 0.1:
                m.pop(key, None)
        if m.get("method") == "tools/call" and isinstance(m.get("params"), dict):
            if m["params"].get("name") in ("start_kernel", "restore"):
                m["params"]["name"] = "nope"  # no kernels started, no restores in place
            args = m["params"].get("arguments")
            if isinstance(args, dict) and m["params"].get("name") == "execute" and isinstance(args.get("code"), str):
                args["code"] = "1"
        body = [m, dict(m, id=10_000 + i)] if rng.random() < 0.15 else m
        post(body, headers=with_sid)
        if i % 65 == 64:
            gw.intact("mcp case %d" % i)
    gw.send("DELETE", "mcp", headers={"Mcp-Session-Id": "nope"}, mcp=True)
    gw.send("GET", "mcp", headers=with_sid, mcp=True)
    gw.intact("mcp")


def test_no_crash_or_escaped_exception_in_the_log(gw):
    """Last: the server log has no sign of an exception that escaped a request or a session."""
    gw.intact("log check")
    assert gw.cases > 2200, gw.cases  # the areas above did run their cases
    with open(gw.t.log_path, errors="replace") as f:
        log = f.read()
    for needle in ("unexpected error", "connection ended by an exception", "mcp request failed",
                   "mcp http request failed", "terminate called", "AddressSanitizer", "Assertion"):
        assert needle not in log, "%r in server.log:\n%s" % (needle, "\n".join(
            line for line in log.splitlines() if needle in line)[:3000])
