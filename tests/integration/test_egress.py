# SPDX-License-Identifier: Apache-2.0
# Network policy through `cellgate serve`: the policy from the kernelspec (metadata.cellgate.network),
# from the user's limit (`cellgate user set-limits --network`) and from POST /api/kernels within it;
# the kernel model's `network`; GET /api/kernels/{id}/egress; brokered headers; curl through
# tools/process; the proxy restarted under running kernels, or stopped (the gateway serves on); a
# gateway restart; a bad kernelspec policy stopping `cellgate serve`.
# Real jails, the real proxy, an upstream HTTP server on 127.0.0.1.
import http.server
import json
import os
import signal
import subprocess
import threading
import time

import pytest

import targets as targets_mod
from conftest import selected_targets

pytestmark = pytest.mark.skipif("cellgate" not in selected_targets(), reason="network policy is a cellgate extension")

SECRET = "sk-test-" + os.urandom(12).hex()


class Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path, "host": self.headers.get("Host"),
                           "authorization": self.headers.get("Authorization")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def rule(host, port, **kw):
    return dict({"host": host, "ports": [port], "addresses": ["127.0.0.1/32"]}, **kw)


class User(targets_mod.TokenClient):
    def start(self, expect=201, **body):
        r = self.api("POST", "api/kernels", json=body)
        assert r.status_code == expect, (self.name, r.status_code, r.text)
        return r.json()

    def run(self, kid, code):
        r = self.api("POST", "api/kernels/%s/execute" % kid, json={"code": code, "timeout": 60})
        assert r.status_code == 200, (r.status_code, r.text)
        rep = r.json()
        out = "".join(o.get("text", "") for o in rep["outputs"] if o.get("name") == "stdout")
        errors = [o for o in rep["outputs"] if o.get("output_type") == "error"]
        assert not errors, errors
        return out


@pytest.fixture(scope="module")
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory):
    """An HTTPS upstream on 127.0.0.1 with a certificate from a test CA that only the proxy trusts
    (--egress-upstream-ca): what a brokered https API looks like to the gateway."""
    import ssl
    d = str(tmp_path_factory.mktemp("tls-site"))
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)
    p = lambda n: os.path.join(d, n)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=cellgate test upstream CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", p("server.key"), "-out", p("server.csr"), "-subj", "/CN=api.test")
    with open(p("server.ext"), "w") as f:
        f.write("subjectAltName=DNS:api.test,DNS:web.test\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
    run("openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
        "-CAcreateserial", "-out", p("server.pem"), "-days", "2", "-extfile", p("server.ext"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(p("server.pem"), p("server.key"))
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], p("ca.pem")
    server.shutdown()


def write_spec(kernels_dir, name, network):
    d = os.path.join(kernels_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "kernel.json"), "w") as f:
        json.dump({"argv": [targets_mod.PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": name, "language": "python",
                   "metadata": {"cellgate": {"network": network}}}, f)


@pytest.fixture(scope="module")
def gw(site, tls_site):
    path, why = targets_mod.cellgate_binary()
    if not path:
        pytest.fail("cellgate target required but " + why)
    if os.geteuid() != 0:
        pytest.skip("the jail needs root")
    tokens = {}

    def setup(t):
        tokens["alice"] = t.add_user("alice")
        tokens["bob"] = t.add_user("bob")
        tokens["admin"] = t.add_user("admin", "--admin")
        t.token = tokens["admin"]
        t.http.headers["Authorization"] = "token " + t.token

    t = targets_mod.jail_target()
    # The jails bind the proxy's CA bundle from <runtime-dir> by path: its parents must be searchable.
    os.chmod(t.tmp, 0o711)
    hosts = os.path.join(t.tmp, "egress-hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 web.test api.test other.test\n")
    secrets = os.path.join(t.tmp, "egress-secrets.json")
    with open(secrets, "w") as f:
        json.dump({"api": SECRET}, f)
    os.chmod(secrets, 0o600)
    write_spec(t.kernels_dir, "py-net", {"mode": "allowlist", "allow": [
        rule("web.test", site),
        rule("api.test", site, headers={"Authorization": "Bearer ${secret:api}"}, insecure_http=True),
        rule("api.test", tls_site[0], headers={"Authorization": "Bearer ${secret:api}"})]})
    t.extra_args += ["--egress-hosts", hosts, "--egress-dns", "false", "--egress-secrets", secrets,
                     "--egress-upstream-ca", tls_site[1], "--default-kernel", "cgtest"]
    t.pre_start = setup
    t.start()
    users = {n: User(t, n, tok) for n, tok in tokens.items()}
    yield t, users
    t.stop()


FETCH = """
import json, urllib.request, requests
def fetch(url):
    try:
        r = requests.get(url, timeout=20)
        return r.status_code, r.text
    except requests.exceptions.ProxyError as e:
        return 'proxy', str(e)
    except Exception as e:
        return 'error', type(e).__name__ + ': ' + str(e)
"""


def fetch(user, kid, url):
    return json.loads(user.run(kid, FETCH + "print(json.dumps(fetch(%r)))" % url))


def test_kernelspec_policy_in_the_model_and_in_the_kernel(gw, site):
    t, u = gw
    k = u["alice"].start(name="py-net")
    assert k["network"]["mode"] == "allowlist"
    assert [r["host"] for r in k["network"]["allow"]] == ["web.test", "api.test", "api.test"]
    # The operator's secret is named, never shown.
    assert "${secret:api}" in json.dumps(k["network"]) and SECRET not in json.dumps(k["network"])
    assert u["alice"].api("GET", "api/kernels/" + k["id"]).json()["network"] == k["network"]
    status, body = fetch(u["alice"], k["id"], "http://web.test:%d/hello" % site)
    assert status == 200 and json.loads(body)["path"] == "/hello"
    out = u["alice"].run(k["id"], "import urllib.request\n"
                                  "print(urllib.request.urlopen('http://web.test:%d/u', timeout=20).status)" % site)
    assert out.strip() == "200"
    status, body = fetch(u["alice"], k["id"], "http://other.test:%d/" % site)
    assert status == 403 and "cellgate egress" in body and "other.test" in body
    # No route but the proxy: the host's loopback is not the jail's, and nothing else is reachable.
    out = u["alice"].run(k["id"], "import socket, errno\n"
                                  "for a in [('127.0.0.1', %d), ('10.1.2.3', 80), ('169.254.169.254', 80)]:\n"
                                  "    s = socket.socket(); s.settimeout(3)\n"
                                  "    print(errno.errorcode.get(s.connect_ex(a), 'ok'))\n" % site)
    assert out.split() == ["ECONNREFUSED", "ENETUNREACH", "ENETUNREACH"], out


def test_brokered_header_the_kernel_never_sees(gw, site):
    t, u = gw
    k = u["alice"].start(name="py-net")
    status, body = fetch(u["alice"], k["id"], "http://api.test:%d/v1/me" % site)
    assert status == 200 and json.loads(body)["authorization"] == "Bearer " + SECRET
    # Neither the kernel's environment nor its files hold the key (egress.header_injection also
    # searches the kernel's memory, through the same proxy).
    out = u["alice"].run(k["id"], """
import os
key = %r[::-1].encode()
found = [k for k, v in os.environ.items() if key in v.encode()]
for root in ('/etc', '/tmp', '/workspace', '/home'):
    for d, _, files in os.walk(root):
        for f in files:
            try:
                if key in open(os.path.join(d, f), 'rb').read(1 << 20): found.append(os.path.join(d, f))
            except OSError:
                pass
print('FOUND', found)
""" % SECRET[::-1])
    assert out.strip() == "FOUND []", out


def test_brokered_header_over_https(gw, tls_site):
    """The proxy terminates the kernel's TLS with the jails' CA, adds the header, and speaks TLS to
    the upstream, which it verifies: requests in a cell sees a valid certificate and the answer; the
    cell never had the key."""
    t, u = gw
    k = u["alice"].start(name="py-net")
    status, body = fetch(u["alice"], k["id"], "https://api.test:%d/v1/me" % tls_site[0])
    assert status == 200, body
    assert json.loads(body)["authorization"] == "Bearer " + SECRET
    # The certificate the cell saw is the proxy's, issued for api.test by the jails' CA.
    out = u["alice"].run(k["id"], """
import os, socket, ssl
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(b"CONNECT api.test:%d HTTP/1.1\\r\\nHost: api.test:%d\\r\\n\\r\\n")
head = b""
while not head.endswith(b"\\r\\n\\r\\n"):
    head += s.recv(1)
t = ctx.wrap_socket(s, server_hostname="api.test")
issuer = dict(x[0] for x in t.getpeercert()["issuer"])
print("ISSUER", issuer.get("commonName"))
""" % (tls_site[0], tls_site[0]))
    assert out.startswith("ISSUER ") and "cellgate test upstream CA" not in out, out
    lines = u["alice"].api("GET", "api/kernels/%s/egress?recent=20" % k["id"]).json()["recent"]
    assert any(l["kind"] == "intercept" and l["host"] == "api.test" and l["decision"] == "allowed" for l in lines), lines


def test_kernel_without_policy_has_no_network(gw, site):
    t, u = gw
    k = u["alice"].start(name="cgtest")
    assert k["network"] == {"mode": "none"}
    status, body = fetch(u["alice"], k["id"], "http://web.test:%d/" % site)
    assert status == "error", body
    e = u["alice"].api("GET", "api/kernels/%s/egress" % k["id"])
    assert e.status_code == 200 and e.json()["policy"] == {"mode": "none"} and e.json()["recent"] == []


def test_request_within_what_the_user_may_have(gw, site):
    t, u = gw
    k = u["bob"].start(name="py-net", network={"mode": "allowlist", "allow": [rule("web.test", site)]})
    assert [r["host"] for r in k["network"]["allow"]] == ["web.test"]
    assert fetch(u["bob"], k["id"], "http://web.test:%d/" % site)[0] == 200
    status, body = fetch(u["bob"], k["id"], "http://api.test:%d/" % site)
    assert status == 403, body
    # A request naming a host inherits the operator's headers for it, and cannot bring its own.
    k2 = u["bob"].start(name="py-net", network={"mode": "allowlist", "allow": [rule("api.test", site)]})
    assert json.loads(fetch(u["bob"], k2["id"], "http://api.test:%d/" % site)[1])["authorization"] == "Bearer " + SECRET
    none = u["bob"].start(name="py-net", network={"mode": "none"})
    assert none["network"] == {"mode": "none"}


@pytest.mark.parametrize("network,status,field", [
    ({"mode": "allowlist", "allow": [rule("other.test", 80)]}, 403, "network.allow[0]"),
    ({"mode": "allowlist", "allow": [rule("web.test", 1)]}, 403, "network.allow[0]"),
    ({"mode": "allowlist", "allow": [dict(rule("web.test", 1), headers={"Authorization": "x"})]}, 403,
     "network.allow[0].headers"),
    ({"mode": "sometimes"}, 400, "network.mode"),
    ({"mode": "allowlist", "allow": [{"host": "web.test", "ports": [70000]}]}, 400, "network.allow[0].ports[0]"),
    ({"mode": "allowlist", "allow": [{"cidr": "127.0.0.0/8"}]}, 400, "network.allow[0]"),
    ("web.test", 400, "network"),
])
def test_bad_or_excessive_requests_are_refused(gw, network, status, field):
    t, u = gw
    before = len(t.get("api/kernels").json())
    r = u["bob"].api("POST", "api/kernels", json={"name": "py-net", "network": network})
    assert r.status_code == status, r.text
    assert set(r.json()) >= {"reason", "message"}
    if field:
        assert field in r.json()["message"], r.json()
    assert len(t.get("api/kernels").json()) == before


def test_spec_without_network_gives_none_unless_the_user_limit_allows(gw, site):
    t, u = gw
    r = u["bob"].api("POST", "api/kernels", json={"name": "cgtest", "network": {"mode": "allowlist",
                                                                                "allow": [rule("web.test", site)]}})
    assert r.status_code == 403 and "may not have network access" in r.json()["message"], r.text
    t.cli("user", "set-limits", "bob", "--network", json.dumps({"mode": "allowlist", "allow": [rule("web.test", site)]}))
    try:
        k = u["bob"].start(name="cgtest", network={"mode": "allowlist", "allow": [rule("web.test", site)]})
        assert fetch(u["bob"], k["id"], "http://web.test:%d/" % site)[0] == 200
        # The kernelspec's own rules are judged against bob's limit: api.test is not within it.
        r = u["bob"].api("POST", "api/kernels", json={"name": "py-net"})
        assert r.status_code == 403 and "api.test" in r.json()["message"], r.text
        t.cli("user", "set-limits", "bob", "--network", "none")
        r = u["bob"].api("POST", "api/kernels", json={"name": "py-net", "network": {"mode": "allowlist",
                                                                                    "allow": [rule("web.test", site)]}})
        assert r.status_code == 403, r.text
    finally:
        t.cli("user", "set-limits", "bob", "--network", "default")
    listed = t.cli("user", "list")
    assert "bob" in listed


def test_user_cli_refuses_a_bad_policy_with_one_line(gw):
    t, u = gw
    out = subprocess.run([t.binary, "user", "set-limits", "bob", "--network", '{"mode":"allowlist","allow":[{"host":"a b"}]}',
                          "--data-dir", t.data_dir], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "network.allow[0]" in out.stderr, out.stderr


def test_egress_route_and_audit_log(gw, site):
    t, u = gw
    k = u["alice"].start(name="py-net")
    fetch(u["alice"], k["id"], "http://web.test:%d/a" % site)
    fetch(u["alice"], k["id"], "http://other.test:%d/b" % site)
    r = u["alice"].api("GET", "api/kernels/%s/egress?recent=10" % k["id"])
    assert r.status_code == 200, r.text
    e = r.json()
    lines = e["recent"]
    allowed = [l for l in lines if l["host"] == "web.test" and l["decision"] == "allowed"]
    refused = [l for l in lines if l["host"] == "other.test" and l["decision"] == "refused"]
    assert allowed and refused, lines
    assert allowed[0]["user"] == "alice" and allowed[0]["kernel"] == k["id"] and allowed[0]["bytes_in"] > 0
    assert "not in the allowlist" in refused[0]["reason"]
    assert e["counters"]["bytes_in"] > 0
    assert u["bob"].api("GET", "api/kernels/%s/egress" % k["id"]).status_code == 404
    assert t.get("api/kernels/%s/egress" % k["id"]).status_code == 200  # an admin
    assert u["alice"].api("GET", "api/kernels/%s/egress?recent=x" % k["id"]).status_code == 400
    with open(os.path.join(t.data_dir, "egress-audit.jsonl")) as f:
        audit = [json.loads(l) for l in f]
    assert any(a["kernel"] == k["id"] and a["host"] == "other.test" and a["decision"] == "refused" for a in audit)


def test_curl_through_tools_process(gw, site):
    t, u = gw
    k = u["alice"].start(name="py-net")
    r = u["alice"].api("POST", "api/kernels/%s/tools/process" % k["id"],
                       json={"command": "curl", "args": ["-s", "http://web.test:%d/curl" % site]})
    assert r.status_code == 200 and json.loads(r.json()["stdout"])["path"] == "/curl", r.text
    r = u["alice"].api("POST", "api/kernels/%s/tools/process" % k["id"],
                       json={"command": "curl", "args": ["-s", "http://other.test:%d/" % site]})
    assert "cellgate egress" in r.json()["stdout"], r.text


def egress_pid(t):
    out = subprocess.run(["pgrep", "-f", "--", "--control " + t.run_dir + "/egress.sock"], capture_output=True, text=True)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 1, pids
    return pids[0]


def saved_connections(t, kernel_id):
    """What the proxy has saved of a kernel's counters (<data-dir>/egress-state/counters.json): it
    saves each second once a counter moved, so this waits for the save."""
    path = os.path.join(t.data_dir, "egress-state", "counters.json")
    deadline = time.monotonic() + 10
    n = 0
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                n = json.load(f)["kernels"].get(kernel_id, {}).get("connections", 0)
        except (OSError, ValueError, KeyError):
            n = 0
        if n > 0:
            return n
        time.sleep(0.1)
    return n


def test_proxy_restarted_under_running_kernels(gw, site):
    t, u = gw
    k = u["alice"].start(name="py-net")
    assert fetch(u["alice"], k["id"], "http://web.test:%d/1" % site)[0] == 200
    spent = saved_connections(t, k["id"])
    assert spent >= 1
    old = egress_pid(t)
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if egress_pid(t) != old:
                break
        except AssertionError:
            pass
        time.sleep(0.2)
    # The new proxy has the policy and the jail's endpoint back, and what the kernel spent: a
    # restart does not refill its caps.
    assert fetch(u["alice"], k["id"], "http://web.test:%d/2" % site)[0] == 200
    assert fetch(u["alice"], k["id"], "http://other.test:%d/" % site)[0] == 403
    r = u["alice"].api("GET", "api/kernels/%s/egress" % k["id"])
    assert r.status_code == 200 and r.json()["counters"]["connections"] >= spent + 1, r.text


def test_a_stalled_proxy_never_holds_the_gateway(gw, site):
    """The proxy stopped (SIGSTOP): a request that needs it waits at most its 5 s bound and fails
    503, and every other client is answered meanwhile: the gateway's io thread never waits on it."""
    t, u = gw
    k = u["alice"].start(name="py-net")
    pid = egress_pid(t)
    answer = {}

    def stats():
        t0 = time.monotonic()
        r = u["alice"].api("GET", "api/kernels/%s/egress" % k["id"], timeout=60)
        answer["egress"] = (r.status_code, r.json(), time.monotonic() - t0)

    probes = []
    os.kill(pid, signal.SIGSTOP)
    try:
        asking = threading.Thread(target=stats)
        asking.start()
        time.sleep(0.5)  # its request is with the stopped proxy
        while asking.is_alive():
            t0 = time.monotonic()
            r = u["bob"].api("GET", "api", timeout=60)
            probes.append(time.monotonic() - t0)
            assert r.status_code == 200, r.text
            time.sleep(0.05)
        asking.join()
    finally:
        os.kill(pid, signal.SIGCONT)
    status, body, took = answer["egress"]
    assert status == 503 and "no answer" in body["message"], (status, body)
    print("GET egress answered in %.2f s; GET /api meanwhile: %d answers, slowest %.3f s" % (took, len(probes), max(probes)))
    assert len(probes) >= 5 and max(probes) < 0.5 * took, (took, probes)
    # The proxy continued: the kernel is networked as before, and its record answers again.
    assert fetch(u["alice"], k["id"], "http://web.test:%d/after-stall" % site)[0] == 200
    assert u["alice"].api("GET", "api/kernels/%s/egress" % k["id"]).status_code == 200
    assert u["alice"].api("DELETE", "api/kernels/" + k["id"]).status_code == 204


def test_gateway_restart_keeps_kernels_networked(gw, site):
    t, u = gw
    k = u["alice"].start(name="py-net")
    assert fetch(u["alice"], k["id"], "http://web.test:%d/before" % site)[0] == 200
    spent = saved_connections(t, k["id"])
    assert spent >= 1
    t.kill_gateway()
    t.start()
    deadline = time.monotonic() + 60
    while (r := u["alice"].api("GET", "api/kernels/" + k["id"])).status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.2)  # re-adoption runs after the gateway starts answering
    assert r.status_code == 200 and r.json()["network"]["mode"] == "allowlist", r.text
    assert fetch(u["alice"], k["id"], "http://web.test:%d/after" % site)[0] == 200
    assert fetch(u["alice"], k["id"], "http://other.test:%d/" % site)[0] == 403
    r = u["alice"].api("GET", "api/kernels/%s/egress" % k["id"])
    assert r.status_code == 200 and r.json()["counters"]["connections"] >= spent + 1, r.text


def test_change_a_running_kernels_policy(gw, site):
    """PATCH /api/kernels/{id} {"network"}: the running kernel's policy replaced within what its owner
    may have, at once, kept across a gateway restart; a kernel started without network cannot get one."""
    t, u = gw
    k = u["alice"].start(name="py-net")
    kid = k["id"]
    assert fetch(u["alice"], kid, "http://web.test:%d/a" % site)[0] == 200
    narrower = {"mode": "allowlist", "allow": [rule("api.test", site)]}
    r = u["alice"].api("PATCH", "api/kernels/" + kid, json={"network": narrower})
    assert r.status_code == 200, r.text
    assert [a["host"] for a in r.json()["network"]["allow"]] == ["api.test"]
    assert u["alice"].api("GET", "api/kernels/" + kid).json()["network"] == r.json()["network"]
    status, body = fetch(u["alice"], kid, "http://web.test:%d/b" % site)
    assert status == 403 and "web.test is not in the allowlist" in body, body
    # The operator's header rule still covers api.test: the narrowed rule inherits its header.
    status, body = fetch(u["alice"], kid, "http://api.test:%d/c" % site)
    assert status == 200 and json.loads(body)["authorization"] == "Bearer " + SECRET, body
    assert u["alice"].api("GET", "api/kernels/%s/egress" % kid).json()["policy"]["allow"][0]["host"] == "api.test"

    # Past what alice may have (the kernelspec's policy), malformed, or not alice's to change.
    for network, status, field in [({"mode": "allowlist", "allow": [rule("other.test", site)]}, 403, "network.allow[0]"),
                                   ({"mode": "sometimes"}, 400, "network.mode"), ("web.test", 400, "network")]:
        r = u["alice"].api("PATCH", "api/kernels/" + kid, json={"network": network})
        assert r.status_code == status and field in r.json()["message"], r.text
    for body in [{"name": "python3"}, {}, [1]]:
        r = u["alice"].api("PATCH", "api/kernels/" + kid, json=body)
        assert r.status_code == 400 and set(r.json()) >= {"reason", "message"}, r.text
    r = u["alice"].api("PATCH", "api/kernels/" + kid, data=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert u["bob"].api("PATCH", "api/kernels/" + kid, json={"network": narrower}).status_code == 404
    assert fetch(u["alice"], kid, "http://api.test:%d/d" % site)[0] == 200  # unchanged by the refusals

    # Off, and on again: the jail keeps its endpoint while the policy is none.
    r = u["alice"].api("PATCH", "api/kernels/" + kid, json={"network": {"mode": "none"}})
    assert r.status_code == 200 and r.json()["network"]["mode"] == "none", r.text
    status, body = fetch(u["alice"], kid, "http://api.test:%d/e" % site)
    assert status == 403 and "network access is off" in body, body
    r = u["alice"].api("PATCH", "api/kernels/" + kid, json={"network": {"mode": "allowlist", "allow": [rule("web.test", site)]}})
    assert r.status_code == 200, r.text
    assert fetch(u["alice"], kid, "http://web.test:%d/f" % site)[0] == 200

    # A restarted gateway gives its new proxy the changed policy, not the one the kernel started with.
    t.kill_gateway()
    t.start()
    deadline = time.monotonic() + 60
    while (r := u["alice"].api("GET", "api/kernels/" + kid)).status_code == 404 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert r.status_code == 200 and [a["host"] for a in r.json()["network"]["allow"]] == ["web.test"], r.text
    assert fetch(u["alice"], kid, "http://web.test:%d/g" % site)[0] == 200
    assert fetch(u["alice"], kid, "http://api.test:%d/h" % site)[0] == 403

    # Started without network: the jail has loopback only, fixed when it was made.
    plain = u["alice"].start(name="cgtest")
    web = {"mode": "allowlist", "allow": [rule("web.test", site)]}
    r = u["alice"].api("PATCH", "api/kernels/" + plain["id"], json={"network": web})
    assert r.status_code == 403 and "may not have network access" in r.json()["message"], r.text
    t.cli("user", "set-limits", "alice", "--network", json.dumps(web))
    try:
        r = u["alice"].api("PATCH", "api/kernels/" + plain["id"], json={"network": web})
        assert r.status_code == 409 and "started without network" in r.json()["message"], r.text
    finally:
        t.cli("user", "set-limits", "alice", "--network", "default")
    r = u["alice"].api("PATCH", "api/kernels/" + plain["id"], json={"network": {"mode": "none"}})
    assert r.status_code == 200 and r.json()["network"]["mode"] == "none", r.text
    for kernel in (kid, plain["id"]):
        assert u["alice"].api("DELETE", "api/kernels/" + kernel).status_code == 204


def test_concurrent_policy_changes_leave_the_proxy_with_the_policy_the_gateway_shows(gw, site):
    """Many PATCHes of one kernel's network at once, while its proxy is killed and restarted (the resync
    sends every policy again): each request to the proxy goes on a connection of its own, so without a
    turn per kernel the proxy could apply them in one order and the gateway record them in another; the
    kernel would then be held to a policy that the API no longer shows."""
    import concurrent.futures
    t, u = gw
    kid = u["alice"].start(name="py-net")["id"]
    policies = [{"mode": "allowlist", "allow": [rule("web.test", site)]},
                {"mode": "allowlist", "allow": [rule("api.test", site)]},
                {"mode": "none"}]

    def patch(i):
        r = u["alice"].api("PATCH", "api/kernels/" + kid, json={"network": policies[i % 3]})
        return r.status_code

    mismatches = []
    for round_ in range(20):
        if round_ % 2:
            os.kill(egress_pid(t), signal.SIGKILL)  # the restarted proxy gets every policy again
        with concurrent.futures.ThreadPoolExecutor(24) as pool:
            codes = list(pool.map(patch, range(round_, round_ + 48)))
        assert set(codes) <= {200, 503}, codes
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            shown = u["alice"].api("GET", "api/kernels/" + kid).json()["network"]
            held = u["alice"].api("GET", "api/kernels/%s/egress" % kid)
            if held.status_code == 200 and held.json().get("policy") == shown:
                break
            time.sleep(0.5)
        else:
            mismatches.append((round_, shown, held.status_code, held.text[:300]))
    assert not mismatches, "the proxy holds another policy than the gateway shows: %s" % mismatches
    assert u["alice"].api("DELETE", "api/kernels/" + kid).status_code == 204


def test_bad_kernelspec_policy_stops_serve():
    t = targets_mod.jail_target()
    write_spec(t.kernels_dir, "badnet", {"mode": "allowlist", "allow": [{"host": "web.test", "ports": ["http"]}]})
    os.makedirs(t.run_dir, exist_ok=True)
    out = subprocess.run([t.binary, "serve", "--port", "0", "--data-dir", t.data_dir, "--runtime-dir", t.run_dir,
                          "--kernelspec-dir", t.kernels_dir, "--workspace-volume", "off"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2, (out.returncode, out.stderr)
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("cellgate: kernelspec badnet: metadata.cellgate.network.allow[0].ports[0]"), out.stderr
    assert out.stdout == "", out.stdout  # no URL line: it never served


def test_refusals_are_events_and_counted(gw, site):
    """A connection the proxy refuses reaches the kernel's owner on GET /api/events as
    egress_refused (host, port, refused_by, reason) and moves cellgate_egress_refused_total by one;
    another user's stream does not see it."""
    import http.client
    import urllib.parse
    t, u = gw

    def refused():
        text = t.get("metrics").text
        return {l.split('"')[1]: float(l.split()[-1]) for l in text.splitlines()
                if l.startswith('cellgate_egress_refused_total{reason="')}

    def stream(token, timeout=30):
        p = urllib.parse.urlsplit(t.url)
        conn = http.client.HTTPConnection(p.hostname, p.port, timeout=timeout)
        conn.request("GET", p.path + "api/events", headers={"Authorization": "token " + token,
                                                            "Accept": "text/event-stream"})
        res = conn.getresponse()
        assert res.status == 200
        return conn, res

    def next_event(res, name, deadline):
        buf = b""
        while time.monotonic() < deadline:
            end = buf.find(b"\n\n")
            if end < 0:
                chunk = res.read1(65536)
                assert chunk, "the stream ended"
                buf += chunk
                continue
            block, buf = buf[:end].decode(), buf[end + 2:]
            fields = dict(l.split(": ", 1) for l in block.split("\n") if ": " in l and not l.startswith(":"))
            if fields.get("event") == name:
                return json.loads(fields["data"])
        return None

    k = u["alice"].start(name="py-net")
    time.sleep(1.1)  # refusal events are rate-limited to one per owner a second
    before = refused()
    alice, alice_res = stream(u["alice"].token)
    bob, bob_res = stream(u["bob"].token, timeout=3)
    try:
        status, body = fetch(u["alice"], k["id"], "http://other.test:%d/x" % site)
        assert status == 403, body
        e = next_event(alice_res, "egress_refused", time.monotonic() + 30)
        assert e is not None, "no egress_refused event"
        assert e["kernel_id"] == k["id"] and e["owner"] == "alice" and e["host"] == "other.test", e
        assert e["port"] == site and e["refused_by"] == "policy" and "other.test" in e["reason"], e
        after = refused()
        assert {r: after[r] - before[r] for r in after if after[r] != before[r]} == {"policy": 1}, (before, after)
        try:
            seen = next_event(bob_res, "egress_refused", time.monotonic() + 3)
        except TimeoutError:
            seen = None  # nothing for bob: his stream stays silent (a read timed out)
        assert seen is None, seen
    finally:
        alice.close()
        bob.close()
