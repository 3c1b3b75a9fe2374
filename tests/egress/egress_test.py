#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# egress_test: kernels' network through cellgate-egress, with real jails, clients and servers.
"""One case per ctest (egress.<case>); see README.md. usage: egress_test.py --egress BIN --jail BIN --work DIR CASE"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import PYTHON, Failure, check, log, main  # noqa: E402

# The names the proxy's --hosts file gives; the upstreams listen on the test namespace's loopback.
HOSTS = {"web.test": "127.0.0.1", "api.test": "127.0.0.1", "other.test": "127.0.0.1", "mirror.test": "127.0.0.1",
         "loop.test": "127.0.0.1", "meta.test": "169.254.169.254", "v6.test": "::1", "pypi.test": "127.0.0.1"}
LOOPBACK = ["127.0.0.1"]


def web_policy(port, tls_port=None, extra=()):
    ports = [port] + ([tls_port] if tls_port else [])
    return {"mode": "allowlist", "allow": [{"host": "web.test", "ports": ports, "addresses": LOOPBACK}] + list(extra)}


def refused_line(lines, host, reason_part):
    return [l for l in lines if l["host"] == host and l["decision"] == "refused" and reason_part in l["reason"]]


# A client that sends even NO_PROXY's loopback literals to the proxy (as a hostile cell would).
VIA_PROXY = """
import requests
via_proxy = requests.Session()
via_proxy.trust_env = False
via_proxy.proxies = {"http": "http://127.0.0.1:3128", "https": "http://127.0.0.1:3128"}
"""


# --- cases ----------------------------------------------------------------------------------------

def allowed(rig):
    """An allowed host over http (forwarded) and https (tunnelled), with curl, requests and urllib."""
    http_port, tls_port = rig.upstream(), rig.upstream(tls=True)
    rig.start_egress(HOSTS)
    k = rig.kernel_name("allowed")
    rig.policy(k, web_policy(http_port, tls_port), user="alice")
    code, out, _ = rig.jail_python(k, f"""
import json, subprocess, urllib.request, requests
print("curl-http", subprocess.run(["curl", "-sS", "http://web.test:{http_port}/hello"], capture_output=True, text=True).stdout.strip())
print("curl-https", subprocess.run(["curl", "-sS", "https://web.test:{tls_port}/hello"], capture_output=True, text=True).stdout.strip())
print("requests-http", requests.get("http://web.test:{http_port}/hello").text.strip())
s = requests.Session()
print("requests-https", [s.get("https://web.test:{tls_port}/bytes/1000").status_code for _ in range(3)])
print("urllib-http", urllib.request.urlopen("http://web.test:{http_port}/hello").read().decode().strip())
print("urllib-https", urllib.request.urlopen("https://web.test:{tls_port}/hello").read().decode().strip())
h = requests.get("http://web.test:{http_port}/headers", headers={{"Proxy-Authorization": "Basic x", "Connection": "X-Hop", "X-Hop": "1"}}).json()
print("headers", json.dumps(sorted(h)))
print("chunked", len(requests.get("http://web.test:{http_port}/chunked/250000").content))
print("post", requests.post("http://web.test:{http_port}/upload", data=b"z" * 300000).json()["received"])
print("head", requests.head("http://web.test:{http_port}/bytes/5000").headers["Content-Length"])
""")
    check(code == 0, "the jailed clients ran")
    check(f"curl-http hello from web.test:{http_port}" in out, "curl over http through the proxy")
    check(f"curl-https hello from web.test:{tls_port}" in out, "curl over https (CONNECT) through the proxy")
    check(f"requests-http hello from web.test:{http_port}" in out, "requests over http")
    check("requests-https [200, 200, 200]" in out, "requests over https, three requests on one tunnel")
    check(f"urllib-http hello from web.test:{http_port}" in out and "urllib-https hello" in out, "urllib over http and https")
    headers = json.loads(out.split("headers ", 1)[1].splitlines()[0])
    check("Proxy-Authorization" not in headers and "X-Hop" not in headers, "hop-by-hop headers do not reach the upstream")
    check("chunked 250000" in out and "post 300000" in out, "chunked answers and request bodies pass whole")
    check("head 5000" in out, "a HEAD answer keeps its Content-Length and has no body")
    lines = rig.wait_audit(k, 8)
    check(all(l["decision"] == "allowed" and l["user"] == "alice" for l in lines), "every connection audited as allowed, for alice")
    tunnel = [l for l in lines if l["kind"] == "connect" and l["requests"] == 0 and l["bytes_in"] > 3000]
    check(any(l["port"] == tls_port and l["address"] == "127.0.0.1" for l in tunnel), "a CONNECT line names host, port, address and bytes")
    check(any(l["kind"] == "http" and l["bytes_out"] >= 300000 for l in lines), "bytes out are counted")


def watch(rig):
    """{"op":"watch"}: the connection stays open and gets each refusal's audit line as it happens."""
    import socket
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(rig.control)
    s.sendall(b'{"op":"watch"}\n')
    f = s.makefile("rb")
    check(json.loads(f.readline()) == {"ok": True}, "watch is answered ok")
    return s, f


def refused_host(rig):
    """A host outside the allowlist: 403 with a one-line reason that curl, requests and urllib show;
    a watcher on the control socket gets each refusal as it happens, refused_by "policy"."""
    http_port = rig.upstream()
    rig.start_egress(HOSTS)
    k = rig.kernel_name("refused")
    rig.policy(k, web_policy(http_port))
    watcher, feed = watch(rig)
    code, out, _ = rig.jail_python(k, f"""
import subprocess, urllib.request, requests
try:
    requests.get("https://other.test/x")
except requests.exceptions.ProxyError as e:
    print("requests:", e)
try:
    urllib.request.urlopen("http://other.test:{http_port}/hello")
except Exception as e:
    print("urllib:", e)
r = subprocess.run(["curl", "-sS", "http://other.test:{http_port}/hello"], capture_output=True, text=True)
print("curl-http:", r.stdout.strip())
r = subprocess.run(["curl", "-sS", "-v", "https://other.test/"], capture_output=True, text=True)
print("curl-https:", [l for l in r.stderr.splitlines() if "403" in l])
r = subprocess.run(["curl", "-sS", "http://web.test:{http_port + 1}/"], capture_output=True, text=True)
print("curl-port:", r.stdout.strip())
""")
    check(code == 0, "the jailed clients ran")
    check("Tunnel connection failed: 403 cellgate egress: other.test is not in the allowlist" in out,
          "requests shows the 403 and its reason")
    check("urllib: HTTP Error 403: cellgate egress: other.test is not in the allowlist" in out, "urllib shows it")
    check("curl-http: cellgate egress: other.test is not in the allowlist" in out, "curl prints the reason (body)")
    check("HTTP/1.1 403 cellgate egress: other.test is not in the allowlist" in out, "curl -v shows it for CONNECT")
    check(f"web.test port {http_port + 1} is not allowed (allowed ports: {http_port})" in out, "a port outside the rule")
    lines = rig.wait_audit(k, 4)
    check(len(refused_line(lines, "other.test", "not in the allowlist")) == 4, "each refusal is an audit line")
    check(all(l["refused_by"] == "policy" for l in lines if l["decision"] == "refused"), "refused by the policy")
    pushed = [json.loads(feed.readline()) for _ in range(5)]
    watcher.close()
    check(all(p["kernel"] == k and p["decision"] == "refused" and p["refused_by"] == "policy" for p in pushed),
          "the watcher got each refusal, with its kernel and refused_by")
    check(sum(p["host"] == "other.test" for p in pushed) == 4 and sum(p["host"] == "web.test" for p in pushed) == 1,
          "the four hosts and the port outside the rule, in the order they happened")


def ip_literal(rig):
    """IP literals need an IP rule (off by default); odd spellings of 127.0.0.1 are not hosts."""
    http_port = rig.upstream()
    rig.start_egress(HOSTS)
    k = rig.kernel_name("ip")
    rig.policy(k, web_policy(http_port))
    code, out, _ = rig.jail_python(k, VIA_PROXY + f"""
for url in ["http://127.0.0.1:{http_port}/hello", "https://127.0.0.1:{http_port}/", "http://[::1]:{http_port}/",
            "http://2130706433:{http_port}/", "http://0x7f.1:{http_port}/"]:
    try:
        r = via_proxy.get(url, timeout=10)
        print("STATUS", url, r.status_code, r.reason)
    except Exception as e:
        print("ERROR", url, e)
""")
    check(code == 0, "the jailed client ran")
    check(f"STATUS http://127.0.0.1:{http_port}/hello 403 cellgate egress: 127.0.0.1 is an IP address" in out, "an IPv4 literal (http)")
    check("Tunnel connection failed: 403 cellgate egress: 127.0.0.1 is an IP address" in out, "an IPv4 literal (CONNECT)")
    check(f"STATUS http://[::1]:{http_port}/ 403 cellgate egress: ::1 is an IP address" in out, "an IPv6 literal")
    check(f"STATUS http://2130706433:{http_port}/ 400" in out and f"STATUS http://0x7f.1:{http_port}/ 400" in out,
          "decimal and hex spellings of 127.0.0.1 are refused as malformed")
    with_ip = rig.ctl({"op": "set", "kernel": k, "user": "alice",
                       "policy": {"mode": "allowlist", "allow": [{"cidr": "127.0.0.1", "ports": [http_port]}]}})
    check(not with_ip["ok"] and with_ip["error"].startswith("network.allow[0].cidr: IP rules are off"),
          "a CIDR rule is refused while IP rules are off, naming the field")


def ip_rules_on(rig):
    """With --ip-rules, a CIDR rule allows exactly its range (and names its addresses)."""
    http_port = rig.upstream()
    rig.start_egress(HOSTS, extra=["--ip-rules"])
    k = rig.kernel_name("cidr")
    rig.policy(k, {"mode": "allowlist", "allow": [{"cidr": "127.0.0.0/30", "ports": [http_port]}]})
    code, out, _ = rig.jail_python(k, VIA_PROXY + f"""
print("A", via_proxy.get("http://127.0.0.1:{http_port}/hello").status_code)
print("B", via_proxy.get("http://127.0.0.8:{http_port}/hello").status_code)
""")
    check("A 200" in out, "an address inside the CIDR rule")
    check("B 403" in out, "an address outside it")


def gateway_port(rig):
    """The gateway's own port is refused even to a rule naming every address and port."""
    http_port = rig.upstream()
    gateway = rig.upstream()  # stands in for the gateway's listener
    rig.start_egress(HOSTS, extra=["--deny", f"127.0.0.1:{gateway}=the gateway"])
    k = rig.kernel_name("gw")
    rig.policy(k, {"mode": "allowlist", "allow": [{"host": "web.test", "ports": ["1-65535"], "addresses": ["0.0.0.0/0", "::/0"]}]})
    code, out, _ = rig.jail_python(k, f"""
import requests
print("GW", requests.get("http://web.test:{gateway}/hello").text.strip())
print("OTHER", requests.get("http://web.test:{http_port}/hello").status_code)
""")
    check(f"GW cellgate egress: web.test resolves to 127.0.0.1, where port {gateway} is the gateway" in out,
          "the gateway's port is refused")
    check("OTHER 200" in out, "another port of the same address is not")
    line = refused_line(rig.wait_audit(k, 2), "web.test", "the gateway")
    check(len(line) == 1 and line[0]["address"] == "", "refused before any connection (no address in the audit line)")


def metadata(rig):
    """The metadata address is refused before any connect. The proxy's namespace has no route to
    169.254.169.254 at all, so an attempted connect would answer 502 (unreachable), not 403."""
    rig.start_egress(HOSTS)
    k = rig.kernel_name("meta")
    rig.policy(k, {"mode": "allowlist", "allow": ["meta.test:80", {"host": "meta2.test", "ports": [80], "addresses": ["10.0.0.0/8"]}]})
    code, out, _ = rig.jail_python(k, """
import requests
r = requests.get("http://meta.test/latest/meta-data/")
print("META", r.status_code, r.reason)
r = requests.get("http://169.254.169.254/latest/meta-data/")
print("LITERAL", r.status_code, r.reason)
""")
    check("META 403 cellgate egress: meta.test resolves to 169.254.169.254, the cloud metadata address" in out,
          "a name that resolves to the metadata address")
    check("LITERAL 403 cellgate egress: 169.254.169.254 is an IP address" in out, "the literal address")
    lines = rig.wait_audit(k, 2)
    check(all(l["address"] == "" and l["bytes_out"] == 0 for l in lines), "no connection was attempted")
    check([l.get("refused_by") for l in lines] == ["address", "policy"], "refused by the address, then by the policy")


def loopback_name(rig):
    """A name that resolves to loopback is refused unless the rule names the address."""
    http_port = rig.upstream()
    rig.start_egress(HOSTS)
    k = rig.kernel_name("loop")
    rig.policy(k, {"mode": "allowlist", "allow": [f"loop.test:{http_port}", {"host": "web.test", "ports": [http_port], "addresses": LOOPBACK}]})
    code, out, _ = rig.jail_python(k, f"""
import requests
print("LOOP", requests.get("http://loop.test:{http_port}/hello").reason)
print("WEB", requests.get("http://web.test:{http_port}/hello").status_code)
""")
    check(f"LOOP cellgate egress: loop.test resolves to 127.0.0.1, a loopback address" in out, "loopback refused")
    check("WEB 200" in out, "the same address, named by a rule, is allowed")


def sni_mismatch(rig):
    """A CONNECT whose TLS names another host (domain fronting) is cut with access_denied."""
    tls_port = rig.upstream(tls=True)
    rig.start_egress(HOSTS)
    k = rig.kernel_name("sni")
    rig.policy(k, {"mode": "allowlist", "allow": [{"host": "web.test", "ports": [tls_port], "addresses": LOOPBACK}]})
    code, out, _ = rig.jail_python(k, f"""
import socket, ssl, subprocess
def tunnel():
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT web.test:{tls_port} HTTP/1.1\\r\\nHost: web.test:{tls_port}\\r\\n\\r\\n")
    assert s.recv(1000).startswith(b"HTTP/1.1 200"), "tunnel"
    return s
ctx = ssl.create_default_context()
for sni in ["other.test", None]:
    try:
        ctx.check_hostname = sni is not None
        ctx.wrap_socket(tunnel(), server_hostname=sni)
        print("HANDSHAKE", sni)
    except Exception as e:
        print("REFUSED", sni, e)
s = tunnel(); s.sendall(b"GET / HTTP/1.1\\r\\nHost: web.test\\r\\n\\r\\n"); print("PLAIN", s.recv(100))
r = subprocess.run(["curl", "-sS", "--connect-to", "other.test:{tls_port}:web.test:{tls_port}", "https://other.test:{tls_port}/hello"],
                   capture_output=True, text=True)
print("CURL", r.returncode, r.stderr.strip())
""")
    check("REFUSED other.test [SSL: TLSV1_ALERT_ACCESS_DENIED]" in out, "an SNI naming another host gets access_denied")
    check("REFUSED None" in out, "a ClientHello without SNI is refused too")
    check("PLAIN b''" in out, "a tunnel that does not start with TLS is closed")
    lines = rig.wait_audit(k, 3)
    check(len(refused_line(lines, "web.test", "the TLS server name 'other.test' is not the CONNECT host web.test")) >= 1,
          "the audit line says which name was sent")
    check(len(refused_line(lines, "web.test", "does not start with a TLS ClientHello")) == 1, "and the non-TLS tunnel")


def ipv6(rig):
    """IPv6 upstreams: allowed when the rule names the address, refused as loopback otherwise."""
    v6_port = rig.upstream(bind="::1")
    v6_tls = rig.upstream(bind="::1", tls=True)
    rig.start_egress(HOSTS)
    k = rig.kernel_name("v6")
    rig.policy(k, {"mode": "allowlist", "allow": [{"host": "v6.test", "ports": [v6_port, v6_tls], "addresses": ["::1"]},
                                                   {"host": "loop.test", "ports": [v6_port]}]})
    code, out, _ = rig.jail_python(k, VIA_PROXY + f"""
print("HTTP", requests.get("http://v6.test:{v6_port}/hello").text.strip())
print("HTTPS", requests.get("https://v6.test:{v6_tls}/hello").text.strip())
print("LIT", via_proxy.get("http://[::1]:{v6_port}/hello").reason)
""")
    check(f"HTTP hello from v6.test:{v6_port}" in out and f"HTTPS hello from v6.test:{v6_tls}" in out, "an IPv6 upstream, http and https")
    check("LIT cellgate egress: ::1 is an IP address" in out, "an IPv6 literal is refused")
    lines = rig.wait_audit(k, 3)
    check(any(l["address"] == "::1" and l["decision"] == "allowed" for l in lines), "the audit line has the IPv6 address")
    k2 = rig.kernel_name("v6b")
    rig.policy(k2, {"mode": "allowlist", "allow": [{"host": "v6.test", "ports": [v6_port]}]})
    code, out, _ = rig.jail_python(k2, f"""
import requests
print("UNNAMED", requests.get("http://v6.test:{v6_port}/hello").reason)
""")
    check("UNNAMED cellgate egress: v6.test resolves to ::1, a loopback address" in out, "::1 unnamed is loopback")


def private_netns(rig):
    """A private address in another network namespace (a veth pair the test makes) is refused
    unless the rule names it; the jail itself has no route there."""
    import subprocess
    ns = f"cgeg{os.getpid()}"
    sub = f"10.{os.getpid() % 250}.{(os.getpid() // 250) % 250}"
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)
    run("ip", "netns", "add", ns)
    try:
        run("ip", "link", "add", f"{ns}a", "type", "veth", "peer", "name", f"{ns}b")
        run("ip", "link", "set", f"{ns}b", "netns", ns)
        run("ip", "addr", "add", f"{sub}.1/30", "dev", f"{ns}a")
        run("ip", "link", "set", f"{ns}a", "up")
        run("ip", "-n", ns, "addr", "add", f"{sub}.2/30", "dev", f"{ns}b")
        run("ip", "-n", ns, "link", "set", f"{ns}b", "up")
        run("ip", "-n", ns, "link", "set", "lo", "up")
        server = subprocess.Popen(["ip", "netns", "exec", ns, PYTHON, os.path.join(os.path.dirname(__file__), "upstream_server.py"),
                                   "--bind", f"{sub}.2", "--port", "8080"], stdout=subprocess.PIPE, text=True)
        rig.procs.append(server)
        check(server.stdout.readline().strip() == "ready", "a server in the test's second namespace")
        rig.start_egress(dict(HOSTS, **{"intra.test": f"{sub}.2", "intra2.test": f"{sub}.2"}))
        k = rig.kernel_name("private")
        rig.policy(k, {"mode": "allowlist", "allow": ["intra.test:8080", {"host": "intra2.test", "ports": [8080], "addresses": [f"{sub}.0/30"]}]})
        code, out, _ = rig.jail_python(k, f"""
import errno, requests, socket
print("UNNAMED", requests.get("http://intra.test:8080/hello").reason)
print("NAMED", requests.get("http://intra2.test:8080/hello").text.strip())
s = socket.socket(); s.settimeout(5)
print("RAW", errno.errorcode.get(s.connect_ex(("{sub}.2", 8080))))
""")
        check(f"UNNAMED cellgate egress: intra.test resolves to {sub}.2, a private address" in out, "a private address, unnamed")
        check("NAMED hello from intra2.test:8080" in out, "a private address the rule names")
        check("RAW ENETUNREACH" in out, "a raw socket from the jail has no route")
    finally:
        subprocess.run(["ip", "link", "del", f"{ns}a"], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def cross_kernel(rig):
    """A kernel cannot use another kernel's endpoint or policy: each jail's endpoint exists only in
    its own namespace, and nothing a kernel sends names it."""
    http_port = rig.upstream()
    rig.start_egress(HOSTS)
    k1, k2 = rig.kernel_name("owner"), rig.kernel_name("other")
    rig.policy(k1, web_policy(http_port), user="alice")
    rig.policy(k2, {"mode": "allowlist", "allow": ["pypi.test:443"]}, user="bob")
    holder = rig.background_jail(k1, [PYTHON, "-c", f"""
import time, requests
print("K1", requests.get("http://web.test:{http_port}/hello").status_code, flush=True)
time.sleep(60)
"""])
    check(holder.stdout.readline().startswith("K1 200"), "k1 reaches web.test through its endpoint")
    code, out, _ = rig.jail_python(k2, f"""
import errno, os, socket, requests
print("OWN", requests.get("http://web.test:{http_port}/hello").status_code)
print("FORGED", requests.get("http://web.test:{http_port}/hello",
      headers={{"Proxy-Authorization": "Basic {k1}", "X-Cellgate-Kernel": "{k1}", "Forwarded": "for={k1}"}}).status_code)
print("CONTROL", os.path.exists("{rig.control}"), os.path.exists(os.path.dirname("{rig.control}")))
listening = []
for port in (3128, 3129, {http_port}, 8888):
    s = socket.socket(); s.settimeout(3)
    listening.append((port, errno.errorcode.get(s.connect_ex(("127.0.0.1", port)), "connected")))
print("LOCAL", listening)
s = socket.socket(socket.AF_UNIX)
print("ABSTRACT", errno.errorcode.get(s.connect_ex("\\0cellgate-egress")))
s = socket.socket(); s.settimeout(3)
print("RAW", errno.errorcode.get(s.connect_ex(("192.0.2.1", 80))))
try:
    socket.getaddrinfo("web.test", 80)
    print("DNS resolved")
except socket.gaierror as e:
    print("DNS", e.errno == socket.EAI_NONAME or e.errno == socket.EAI_AGAIN)
""")
    check(f"OWN 403" in out and "FORGED 403" in out, "k2's requests are k2's, whatever it claims")
    check("CONTROL False False" in out, "the proxy's control socket is not in the jail")
    check(f"LOCAL [(3128, 'connected'), (3129, 'ECONNREFUSED'), ({http_port}, 'ECONNREFUSED'), (8888, 'ECONNREFUSED')]" in out,
          "only its own endpoint listens on the jail's loopback")
    check("ABSTRACT ECONNREFUSED" in out, "abstract sockets are the jail's own")
    check("RAW ENETUNREACH" in out, "a raw socket to a non-loopback address has no route")
    check("DNS True" in out, "the jail has no resolver")
    lines2 = rig.wait_audit(k2, 2)
    check(len(lines2) >= 2 and all(l["user"] == "bob" and l["decision"] == "refused" for l in lines2), "k2's lines are bob's, refused")
    lines1 = rig.audit(k1)
    check(len(lines1) == 1 and lines1[0]["user"] == "alice", "k1's line is alice's")
    stats = rig.ctl({"op": "stats", "kernel": k1, "recent": 5})
    check(stats["ok"] and stats["attached"] and stats["counters"]["refused"] == 0, "k1's counters saw none of k2's refusals")
    holder.terminate()
    holder.wait(timeout=20)
    deadline = time.monotonic() + 10
    while rig.ctl({"op": "stats", "kernel": k1})["attached"] and time.monotonic() < deadline:
        time.sleep(0.1)
    check(not rig.ctl({"op": "stats", "kernel": k1})["attached"], "the endpoint closes when the jail ends")


def header_injection(rig):
    """A brokered header: the cell calls an API that needs a key it never sees."""
    api_port = rig.upstream(tls=True, auth="Bearer " + rig.secret)
    http_port = rig.upstream(auth="Bearer " + rig.secret)
    rig.start_egress(HOSTS)
    k = rig.kernel_name("inject")
    rig.policy(k, {"mode": "allowlist", "allow": [
        {"host": "api.test", "ports": [api_port, http_port], "addresses": LOOPBACK, "headers": {"Authorization": "Bearer ${secret:api}"}}]})
    secret = rig.secret
    code, out, _ = rig.jail_python(k, f"""
import os, re, subprocess, requests, urllib.request, json
print("REQUESTS", requests.get("https://api.test:{api_port}/auth").json())
print("OVERRIDE", requests.get("https://api.test:{api_port}/auth", headers={{"Authorization": "Bearer mine"}}).json())
print("URLLIB", json.load(urllib.request.urlopen("https://api.test:{api_port}/auth")))
print("CURL", subprocess.run(["curl", "-sS", "https://api.test:{api_port}/auth"], capture_output=True, text=True).stdout)
print("PLAIN", requests.get("http://api.test:{http_port}/auth").reason)
print("FRONT", requests.get("https://api.test:{api_port}/auth", headers={{"Host": "web.test"}}).reason)
# The key is searched for as two halves that this script never joins: a hit is a copy made elsewhere.
head, tail = b"{secret[:12]}", b"{secret[12:]}"
def holds(data):
    at = data.find(head)
    while at >= 0:
        if data[at + len(head):at + len(head) + len(tail)] == tail:
            return True
        at = data.find(head, at + 1)
    return False
found = []
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev", "/usr")]
    for name in files:
        p = os.path.join(root, name)
        try:
            if os.path.isfile(p) and os.path.getsize(p) < 50 << 20 and holds(open(p, "rb").read()):
                found.append(p)
        except OSError:
            pass
print("FILES", found)
print("ENV", any(holds(v.encode()) for v in os.environ.values()))
hits = 0
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        addr, perms = line.split()[:2]
        if "r" not in perms:
            continue
        lo, hi = (int(x, 16) for x in addr.split("-"))
        try:
            mem.seek(lo)
            hits += holds(mem.read(hi - lo))
        except (OSError, ValueError, OverflowError):
            pass
print("MEMORY", hits)
""")
    check("REQUESTS {'authorized': True}" in out, "requests: the proxy added the key")
    check("OVERRIDE {'authorized': True}" in out, "the kernel's own Authorization is replaced, not forwarded")
    check("URLLIB {'authorized': True}" in out and 'CURL {"authorized": true}' in out, "urllib and curl too")
    check("PLAIN cellgate egress: this host's rule adds credentials, which go over https only" in out,
          "the key is never sent over plain http")
    check("FRONT cellgate egress: the Host header names another host than the CONNECT host" in out, "Host fronting inside the tunnel")
    check("FILES []" in out, "no file in the jail holds the key")
    check("ENV False" in out, "the kernel's environment does not")
    check("MEMORY 0" in out, "nor its memory, after three brokered requests")
    lines = rig.wait_audit(k, 4)
    check(any(l["kind"] == "intercept" and l["requests"] >= 1 for l in lines), "intercepted connections are audited")


def caps(rig):
    """Byte caps cut and then refuse; the open-connection cap refuses; the rate paces."""
    http_port = rig.upstream()
    rig.start_egress(HOSTS)
    k = rig.kernel_name("bytes")
    rig.policy(k, dict(web_policy(http_port), limits={"bytes_in": 300000}))
    code, out, _ = rig.jail_python(k, f"""
import requests
print("SMALL", len(requests.get("http://web.test:{http_port}/bytes/100000").content))
try:
    r = requests.get("http://web.test:{http_port}/bytes/1000000")
    print("BIG cut" if len(r.content) < 1000000 else "BIG whole", len(r.content))
except Exception as e:
    print("BIG cut", type(e).__name__)
print("AFTER", requests.get("http://web.test:{http_port}/hello").reason)
""")
    check("SMALL 100000" in out, "under the cap")
    check("BIG cut" in out, "the download that passes the cap is cut")
    check("AFTER cellgate egress: this kernel's egress cap of 300000 bytes in is used up" in out, "then requests are refused")
    stats = rig.ctl({"op": "stats", "kernel": k})
    check(100000 < stats["counters"]["bytes_in"] <= 300000, "the counter never passes the cap (what was passed on)")

    k = rig.kernel_name("open")
    rig.policy(k, dict(web_policy(http_port), limits={"open": 2}))
    code, out, _ = rig.jail_python(k, f"""
import socket, time
held = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(2)]
for s in held:
    s.sendall(b"GET http://web.test:{http_port}/hello HTTP/1.1\\r\\nHost: web.test\\r\\n\\r\\n")
    s.recv(1000)
third = socket.create_connection(("127.0.0.1", 3128))
third.sendall(b"GET http://web.test:{http_port}/hello HTTP/1.1\\r\\nHost: web.test\\r\\n\\r\\n")
print("THIRD", third.recv(1000).split(b"\\r\\n")[0].decode())
""")
    check("THIRD HTTP/1.1 403 cellgate egress: this kernel has 2 connections open, its cap" in out, "a third open connection")

    k = rig.kernel_name("total")
    rig.policy(k, dict(web_policy(http_port), limits={"connections": 3}))
    code, out, _ = rig.jail_python(k, f"""
import requests
print("CODES", [requests.get("http://web.test:{http_port}/hello").status_code for _ in range(5)])
""")
    check("CODES [200, 200, 200, 403, 403]" in out, "the lifetime cap on connections and requests")

    k = rig.kernel_name("rate")
    rig.policy(k, dict(web_policy(http_port), limits={"rate": 4, "burst": 1}))
    code, out, _ = rig.jail_python(k, f"""
import time, requests
t = time.monotonic()
codes = [requests.get("http://web.test:{http_port}/hello").status_code for _ in range(9)]
print("RATE", codes, round(time.monotonic() - t, 2))
""")
    check("RATE [200, 200, 200, 200, 200, 200, 200, 200, 200]" in out, "paced requests are served, not refused")
    elapsed = float(out.split("RATE ")[1].split("] ")[1].split()[0])
    # The listener takes a token before each accept, so one is taken ahead: 9 connections with a
    # burst of 1 at 4/s need at least (9 - 2) / 4 = 1.75 s (a lower bound: it holds on any host).
    check(elapsed >= 1.75, f"9 requests at 4/s took {elapsed} s (at least 1.75 s)")


def audit_lines(rig):
    """Every connection is one line with kernel, user, host, port, bytes each way and the decision;
    the stats op gives the same lines and the counters."""
    http_port = rig.upstream()
    rig.start_egress(HOSTS)
    k = rig.kernel_name("audit")
    rig.policy(k, web_policy(http_port), user="carol")
    rig.jail_python(k, f"""
import requests
requests.get("http://web.test:{http_port}/bytes/12345")
requests.get("http://other.test:{http_port}/")
""")
    lines = rig.wait_audit(k, 2)
    check(len(lines) == 2, "two connections, two lines")
    ok, no = lines
    for field in ("time", "kernel", "user", "kind", "host", "port", "address", "decision", "reason", "bytes_out", "bytes_in", "requests", "duration_ms"):
        check(field in ok and field in no, f"field {field}")
    check(ok["user"] == "carol" and ok["host"] == "web.test" and ok["port"] == http_port and ok["decision"] == "allowed", "the allowed line")
    check(ok["bytes_in"] > 12345 and ok["bytes_out"] > 50, "bytes each way")
    check(no["decision"] == "refused" and no["reason"] == "other.test is not in the allowlist", "the refused line and why")
    stats = rig.ctl({"op": "stats", "kernel": k, "recent": 10})
    check(stats["recent"] == lines, "the stats op returns the same lines")
    check(stats["counters"]["refused"] == 1 and stats["user"] == "carol", "and the counters")
    listing = rig.ctl({"op": "list"})
    check(any(x["kernel"] == k for x in listing["kernels"]), "the list op names the kernel")
    check(rig.ctl({"op": "remove", "kernel": k})["ok"] and not rig.ctl({"op": "stats", "kernel": k})["ok"], "remove forgets it")


def pip_install(rig):
    """pip installs from a local index through the proxy: a plain-http mirror, and an https mirror
    whose credentials the proxy adds (the jail never has them)."""
    index = rig.path("index")
    make_index(index)
    http_port = rig.upstream(index=index)
    tls_port = rig.upstream(tls=True, index=index, index_auth=True, auth="Basic " + rig.secret)
    rig.start_egress(HOSTS, secrets={"api": rig.secret})
    k = rig.kernel_name("pip")
    rig.policy(k, {"mode": "allowlist", "allow": [
        {"host": "pypi.test", "ports": [http_port], "addresses": LOOPBACK},
        {"host": "mirror.test", "ports": [tls_port], "addresses": LOOPBACK, "headers": {"Authorization": "Basic ${secret:api}"}}]})
    code, out, _ = rig.jail(k, ["/bin/sh", "-c", f"""
set -e
{PYTHON} -m pip install --no-cache-dir --disable-pip-version-check --index-url http://pypi.test:{http_port}/simple/ \\
    --trusted-host pypi.test --target /tmp/a cgegresstest
PYTHONPATH=/tmp/a {PYTHON} -c 'import cgegresstest; print("IMPORTED", cgegresstest.VALUE)'
{PYTHON} -m pip install --no-cache-dir --disable-pip-version-check --index-url https://mirror.test:{tls_port}/simple/ \\
    --target /tmp/b cgegresstest
PYTHONPATH=/tmp/b {PYTHON} -c 'import cgegresstest; print("BROKERED", cgegresstest.VALUE)'
"""], timeout=300)
    check(code == 0, "pip ran")
    check("IMPORTED 42" in out, "pip installed from the http mirror through the proxy")
    check("BROKERED 42" in out, "pip installed from the credentialed https mirror")


def make_index(root):
    """A PEP 503 simple index with one pure-Python wheel, made by hand (zipfile)."""
    import base64
    import hashlib
    import zipfile
    name, version = "cgegresstest", "1.0"
    wheel = f"{name}-{version}-py3-none-any.whl"
    os.makedirs(os.path.join(root, "packages"))
    os.makedirs(os.path.join(root, "simple", name))
    files = {f"{name}/__init__.py": "VALUE = 42\n",
             f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: cellgate-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    path = os.path.join(root, "packages", wheel)
    with zipfile.ZipFile(path, "w") as z:
        for fname, text in files.items():
            z.writestr(fname, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{fname},sha256={digest},{len(text)}")
        record.append(f"{name}-{version}.dist-info/RECORD,,")
        z.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    with open(os.path.join(root, "simple", "index.html"), "w") as f:
        f.write(f'<html><body><a href="{name}/">{name}</a></body></html>\n')
    with open(os.path.join(root, "simple", name, "index.html"), "w") as f:
        f.write(f'<html><body><a href="../../packages/{wheel}#sha256={sha}">{wheel}</a></body></html>\n')


def setup_refusals(rig):
    """A jail whose kernel the proxy does not know fails to start (126, one line); a malformed
    policy is refused naming its field; without --egress a jail has loopback only."""
    rig.start_egress(HOSTS)
    code, out, err = rig.jail("never-registered-" + str(os.getpid()), ["/bin/true"])
    check(code == 126 and "cellgate-jail: egress: unknown kernel never-registered-" in err, "unknown kernel: 126 and why")
    bad = rig.ctl({"op": "set", "kernel": "kx", "policy": {"mode": "allowlist", "allow": [{"host": "a.test", "ports": ["x"]}]}})
    check(bad == {"ok": False, "error": "network.allow[0].ports[0]: not a port (1-65535) or a \"first-last\" range"}, "a bad policy names the field")
    check(not rig.ctl({"op": "set", "kernel": "../x", "policy": {}})["ok"], "a bad kernel id is refused")
    check(rig.ctl({"op": "frobnicate", "kernel": "kx"})["ok"] is False, "an unknown op is refused")
    import subprocess
    ask = lambda req: subprocess.run([rig.egress_bin, "ask", rig.control, req], capture_output=True, text=True)
    listed = ask('{"op": "list"}')
    check(listed.returncode == 0 and json.loads(listed.stdout)["ok"], "cellgate-egress ask: a request and its answer")
    check(ask('{"op": "stats", "kernel": "nobody"}').returncode == 1, "cellgate-egress ask exits 1 on a refusal")
    k = rig.kernel_name("none")
    code, out, _ = rig.jail_python(k, """
import errno, socket
s = socket.socket(); s.settimeout(3)
print("PROXY", errno.errorcode.get(s.connect_ex(("127.0.0.1", 3128))))
""", egress=False)
    check("PROXY ECONNREFUSED" in out, "no --egress: no endpoint in the jail")


def proxy_restart(rig):
    """A proxy killed and started again takes the running jails' endpoints back (cellgate-jail
    --egress-attach takes the listener the init keeps): a request made meanwhile waits in the jail's
    backlog and is served once the new proxy has it."""
    import signal
    import subprocess
    http_port = rig.upstream()
    rig.start_egress(HOSTS)
    k = rig.kernel_name("restart")
    rig.policy(k, web_policy(http_port))
    status = rig.path("jail-status.json")
    holder = rig.background_jail(k, [PYTHON, "-u", "-c", f"""
import sys, requests
for line in iter(input, "quit"):
    try:
        print("GOT", requests.get("http://web.test:{http_port}/hello", timeout=60).status_code, flush=True)
    except Exception as e:
        print("ERR", e, flush=True)
"""], extra=["--status-file", status])
    holder_in = holder.stdin
    holder_in.write("go\n")
    holder_in.flush()
    check(holder.stdout.readline().startswith("GOT 200"), "a request through the first proxy")
    with open(status) as f:
        st = json.load(f)
    check(isinstance(st.get("egress_fd"), int), f"the status file names the init's listener (egress_fd {st.get('egress_fd')})")
    rig.egress.send_signal(signal.SIGKILL)
    rig.egress.wait()
    holder_in.write("go\n")  # made while no proxy runs: it waits in the jail's backlog
    holder_in.flush()
    time.sleep(0.5)
    rig.start_egress(HOSTS)
    rig.policy(k, web_policy(http_port))
    attach = subprocess.run([rig.jail_bin, "--egress-attach", status, "--egress", rig.control, "--name", k],
                            capture_output=True, text=True)
    check(attach.returncode == 0, f"--egress-attach hands the endpoint to the new proxy ({attach.stderr.strip()})")
    check(holder.stdout.readline().startswith("GOT 200"), "the request made while the proxy was down is served")
    holder_in.write("go\n")
    holder_in.flush()
    check(holder.stdout.readline().startswith("GOT 200"), "and the next one")
    again = subprocess.run([rig.jail_bin, "--egress-attach", status, "--egress", rig.control, "--name", k],
                           capture_output=True, text=True)
    check(again.returncode == 0, "attaching again replaces the endpoint")
    other = rig.kernel_name("noegress")
    plain_status = rig.path("plain-status.json")
    plain = subprocess.Popen([rig.jail_bin, "--name", other, "--status-file", plain_status, "--", "/bin/sleep", "30"])
    rig.procs.append(plain)
    deadline = time.monotonic() + 20
    while not (os.path.exists(plain_status) and "running" in open(plain_status).read()) and time.monotonic() < deadline:
        time.sleep(0.1)
    rig.policy(other, web_policy(http_port))
    refused = subprocess.run([rig.jail_bin, "--egress-attach", plain_status, "--egress", rig.control, "--name", other],
                             capture_output=True, text=True)
    check(refused.returncode == 126 and "no egress endpoint" in refused.stderr, "a jail without an endpoint: 126 and why")
    forged = rig.path("forged.json")
    with open(forged, "w") as f:
        json.dump(dict(st, init_pid=os.getpid()), f)
    bad = subprocess.run([rig.jail_bin, "--egress-attach", forged, "--egress", rig.control, "--name", k],
                         capture_output=True, text=True)
    check(bad.returncode == 126, f"a forged status file is refused ({bad.stderr.strip()})")
    holder_in.write("quit\n")
    holder_in.flush()


def counters_survive_restart(rig):
    """A proxy killed (SIGKILL) and started again with the same --state-dir keeps what each kernel
    spent: its byte and connection caps are not refilled, and a removed kernel's counters go."""
    import signal
    import subprocess
    http_port = rig.upstream()
    state = rig.path("state")
    rig.start_egress(HOSTS, extra=["--state-dir", state])
    k = rig.kernel_name("spent")
    policy = dict(web_policy(http_port), limits={"bytes_in": 300000, "connections": 4})
    rig.policy(k, policy)
    code, out, _ = rig.jail_python(k, f"""
import requests
print("FIRST", len(requests.get("http://web.test:{http_port}/bytes/200000").content))
""")
    check("FIRST 200000" in out, "under the cap")
    gone = rig.kernel_name("gone")
    rig.policy(gone, web_policy(http_port))
    rig.jail_python(gone, f"import requests; requests.get('http://web.test:{http_port}/hello')")
    # The proxy saves each second once a counter moves: wait for the file to say so, then kill it.
    saved = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(state, "counters.json")) as f:
                saved = json.load(f)["kernels"]
        except (OSError, ValueError, KeyError):
            saved = {}
        if saved.get(k, {}).get("bytes_in", 0) >= 200000 and gone in saved:
            break
        time.sleep(0.1)
    check(saved.get(k, {}).get("bytes_in", 0) >= 200000, f"the counters are on disk within seconds ({saved.get(k)})")
    check(oct(os.stat(state).st_mode & 0o777) == "0o700", "the state directory is private")
    rig.egress.send_signal(signal.SIGKILL)
    rig.egress.wait()
    rig.start_egress(HOSTS, extra=["--state-dir", state])
    again = rig.policy(k, policy)
    check(again["limits"]["bytes_in"] == 300000, "the same policy again")
    stats = rig.ctl({"op": "stats", "kernel": k})
    check(stats["counters"]["bytes_in"] >= 200000 and stats["counters"]["connections"] >= 1,
          f"a restarted proxy starts from what the kernel spent ({stats['counters']})")
    code, out, _ = rig.jail_python(k, f"""
import requests
try:
    r = requests.get("http://web.test:{http_port}/bytes/200000")
    print("SECOND cut" if len(r.content) < 200000 else "SECOND whole", len(r.content))
except Exception as e:
    print("SECOND cut", type(e).__name__)
print("AFTER", requests.get("http://web.test:{http_port}/hello").reason)
""")
    check("SECOND cut" in out, "the cap still holds after the restart: 200000 more bytes pass it")
    check("AFTER cellgate egress: this kernel's egress cap of 300000 bytes in is used up" in out, "then it is refused")
    check(rig.ctl({"op": "remove", "kernel": gone}).get("ok") is False, "a kernel not set since the restart is unknown")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(os.path.join(state, "counters.json")) as f:
            if gone not in json.load(f)["kernels"]:
                break
        time.sleep(0.1)
    with open(os.path.join(state, "counters.json")) as f:
        check(gone not in json.load(f)["kernels"], "removing it forgets its saved counters")
    with open(os.path.join(state, "counters.json"), "w") as f:
        f.write("{not json")
    rig.egress.send_signal(signal.SIGKILL)
    rig.egress.wait()
    bad = subprocess.run([rig.egress_bin, "--control", rig.path("bad.sock"), "--state-dir", state],
                         capture_output=True, text=True, timeout=30)
    check(bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--state-dir:" in bad.stderr,
          f"a damaged counters file stops the proxy with one line ({bad.stderr.strip()})")


def kernel_cell(rig):
    """A jailed ipykernel (kernelspec argv through cellgate-jail --egress) fetches with requests and
    urllib in a cell."""
    import shutil
    import tempfile
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    http_port, tls_port = rig.upstream(), rig.upstream(tls=True)
    rig.start_egress(HOSTS)
    k = rig.kernel_name("cell")
    rig.policy(k, web_policy(http_port, tls_port))
    spec_dir = tempfile.mkdtemp(prefix="cg-kspec-")
    os.makedirs("/run/cellgate", exist_ok=True)
    runtime = tempfile.mkdtemp(prefix="e-", dir="/run/cellgate")
    kdir = os.path.join(spec_dir, "kernels", "egress-py")
    os.makedirs(kdir)
    argv = rig.jail_cmd(k, [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"], extra=["--connection-file", "{connection_file}"])
    with open(os.path.join(kdir, "kernel.json"), "w") as f:
        json.dump({"argv": argv, "display_name": "egress", "language": "python"}, f)
    ksm = KernelSpecManager()
    ksm.kernel_dirs = [os.path.join(spec_dir, "kernels")]
    km = KernelManager(kernel_name="egress-py", kernel_spec_manager=ksm, transport="ipc")
    km.connection_file = os.path.join(runtime, "k.json")
    km.ip = os.path.join(runtime, "k")
    kc = None
    try:
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        outputs = []
        code = (f"import requests, urllib.request\n"
                f"print(requests.get('https://web.test:{tls_port}/hello').text.strip())\n"
                f"print(urllib.request.urlopen('http://web.test:{http_port}/hello').read().decode().strip())\n")
        kc.execute(code)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["msg_type"] == "stream":
                outputs.append(msg["content"]["text"])
            if msg["msg_type"] == "error":
                outputs.append("ERROR " + msg["content"]["ename"] + " " + msg["content"]["evalue"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle" and msg["parent_header"].get("msg_type") == "execute_request":
                break
        text = "".join(outputs)
        log("  cell output: " + text.replace("\n", " | "))
        check(f"hello from web.test:{tls_port}" in text, "requests from a cell (https)")
        check(f"hello from web.test:{http_port}" in text, "urllib from a cell (http)")
    finally:
        if kc is not None:
            kc.stop_channels()
        if km.has_kernel:
            km.shutdown_kernel(now=True)
        shutil.rmtree(spec_dir, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


CASES = {f.__name__: f for f in (allowed, refused_host, ip_literal, ip_rules_on, gateway_port, metadata, loopback_name,
                                 sni_mismatch, ipv6, private_netns, cross_kernel, header_injection, caps, audit_lines,
                                 pip_install, setup_refusals, proxy_restart, counters_survive_restart, kernel_cell)}

if __name__ == "__main__":
    sys.exit(main(CASES, sys.argv[1:]))
