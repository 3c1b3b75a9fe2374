# SPDX-License-Identifier: Apache-2.0
# Three cellgate nodes sharing one PostgreSQL (docs/cluster.md), each in a network namespace of its
# own with an address on a bridge this test creates; PostgreSQL in a fourth namespace, reached over
# TCP, so that cutting a node's link cuts it off from everything. Certificates of a throwaway cluster
# CA; the nodes authenticate each other with mutual TLS. Loopback and these namespaces only.
import json
import os
import random
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import requests
import websocket

import targets as targets_mod
from jupyter_ws import KernelWS, msg_type

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "postgres"))
from pg_server import PgServer  # noqa: E402

LEASE = 10  # --node-lease, seconds (the default)
NAMES = ("a", "b", "c")
UPSTREAM_PORT = 8080  # a plain HTTP server in the database's namespace, for the networked kernels
UPSTREAM_HOST = "svc.cluster.test"


def sh(*cmd, check=True):
    out = subprocess.run(list(cmd), capture_output=True, timeout=60)
    if check and out.returncode != 0:
        raise RuntimeError("%s: rc=%d %s" % (" ".join(cmd), out.returncode, out.stderr.decode(errors="replace")))
    return out.stdout.decode()


class Net:
    """A bridge in this namespace and a namespace per host on it, named after this run."""

    def __init__(self):
        self.id = secrets.token_hex(3)
        used = sh("ip", "-4", "addr") + sh("ip", "-4", "route", "show", "table", "all")
        for _ in range(100):
            prefix = "10.%d.%d" % (random.randint(64, 250), random.randint(0, 255))
            if prefix + "." not in used:
                break
        self.prefix = prefix
        self.bridge = "cgb" + self.id
        self.namespaces = {}
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", prefix + ".254/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")

    def add(self, name, host):
        ns = "cg%s%s" % (self.id, name)
        outside, inside = "cgv%s%s" % (self.id, name), "cgp%s%s" % (self.id, name)
        sh("ip", "netns", "add", ns)
        self.namespaces[name] = ns
        sh("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        sh("ip", "link", "set", inside, "netns", ns)
        sh("ip", "link", "set", outside, "master", self.bridge)
        sh("ip", "link", "set", outside, "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", inside, "name", "eth0")
        address = "%s.%d" % (self.prefix, host)
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", address + "/24", "dev", "eth0")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        return ns, address

    def link(self, name, up):
        sh("ip", "netns", "exec", self.namespaces[name], "ip", "link", "set", "eth0", "up" if up else "down")

    def remove(self):
        for ns in self.namespaces.values():
            sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", self.bridge, check=False)


def make_ca(d, name):
    key, cert = os.path.join(d, name + ".key"), os.path.join(d, name + ".pem")
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
       key, "-out", cert, "-days", "2", "-subj", "/CN=" + name)
    return key, cert


def make_cert(d, ca, name, address):
    key, csr, cert, ext = (os.path.join(d, name + s) for s in (".key", ".csr", ".pem", ".ext"))
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth,clientAuth\n" % address)
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
       csr, "-subj", "/CN=" + name)
    sh("openssl", "x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0], "-CAcreateserial", "-out", cert, "-days",
       "2", "-extfile", ext)
    return cert, key


class Node(targets_mod.CellgateTarget):
    """`cellgate serve` run inside its namespace."""

    def __init__(self, binary, ns, name, address, certs, ca, database, egress_hosts, upstream_net, store):
        spawner = os.environ.get("CELLGATE_TEST_SPAWNER", "plain")
        # The egress proxy runs as `serve` runs it by default (on with the jail spawner; a plain kernel
        # has the host's network and no proxy), in the node's namespace: names from a hosts file only.
        super().__init__(binary, spawner=spawner, extra_args=[
            "--ip", address, "--cluster-listen", address + ":9443", "--node-id", name,
            "--cluster-cert", certs[0], "--cluster-key", certs[1], "--cluster-ca", ca,
            "--node-lease", str(LEASE), "--egress-hosts", egress_hosts, "--egress-dns", "false",
            "--store-dir", store])
        self.ns, self.name, self.address = ns, name, address
        self.database = database
        self.http.trust_env = False  # no proxy from the environment between the test and its namespaces
        # The jails bind the proxy's CA bundle from the runtime dir by path: its parents must be searchable.
        os.chmod(self.tmp, 0o711)
        # The same networked kernelspec on every node: placement may start it on any of them.
        d = os.path.join(self.kernels_dir, "py-net")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "kernel.json"), "w") as f:
            json.dump({"argv": [targets_mod.PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "py-net", "language": "python",
                       "metadata": {"cellgate": {"network": {"mode": "allowlist", "allow": [
                           {"host": UPSTREAM_HOST, "ports": [UPSTREAM_PORT], "addresses": [upstream_net]}]}}}}, f)

    def _popen(self, cmd, **kw):
        # nsenter, not `ip netns exec`: that one also remounts /sys in a mount namespace of its own,
        # which hides the cgroup hierarchies the jail needs.
        return super()._popen(["nsenter", "--net=/run/netns/" + self.ns, "--"] + cmd, **kw)


class Cluster:
    """PostgreSQL, an upstream HTTP server and a node per name, each in a namespace of its own; what
    bench/cluster/cluster_bench.py runs on too."""

    def __init__(self, names=NAMES):
        path, why = targets_mod.cellgate_binary()
        if not path:
            pytest.fail("cellgate target required but " + why)
        self.tmp = tempfile.mkdtemp(prefix="cgcluster-")
        self.net = Net()
        self.pg = None
        self.upstream = None
        self.nodes = {}
        try:
            ns, pg_address = self.net.add("db", 5)
            self.pg_address = pg_address
            self.pg = PgServer(netns=ns, listen=pg_address, trust_net=self.net.prefix + ".0/24").start()
            self.db_name = self.pg.create_database()
            self.url = self.pg.tcp_url(self.db_name)
            self.upstream = self.start_upstream(ns, pg_address)
            hosts = os.path.join(self.tmp, "egress-hosts")
            with open(hosts, "w") as f:
                f.write("%s %s\n" % (pg_address, UPSTREAM_HOST))
            os.chmod(self.tmp, 0o711)  # the proxy may read the hosts file as its own uid
            self.store = os.path.join(self.tmp, "shared-store")
            ca = make_ca(self.tmp, "cluster-ca")
            self.ca = ca[1]
            for i, name in enumerate(names):
                ns, address = self.net.add(name, 10 + i)
                certs = make_cert(self.tmp, ca, name, address)
                # One snapshot store for all three, as a shared filesystem (NFS, CephFS, EFS) would be.
                self.nodes[name] = Node(path, ns, name, address, certs, self.ca, self.url, hosts,
                                        self.net.prefix + ".0/24", self.store)
            a = self.nodes["a"]
            self.tokens = {u: a.add_user(u, *flags) for u, flags in
                           (("alice", ()), ("bob", ()), ("carol", ("--max-kernels", "2")), ("dave", ()))}
            for node in self.nodes.values():
                self.login(node, "alice")
                node.start()
        except BaseException:
            self.remove()
            raise

    def start_upstream(self, ns, address):
        root = os.path.join(self.tmp, "upstream")
        os.makedirs(root)
        with open(os.path.join(root, "hello"), "w") as f:
            f.write("hello from the upstream\n")
        proc = subprocess.Popen(["nsenter", "--net=/run/netns/" + ns, "--", "/usr/bin/python3", "-m", "http.server",
                                 "--bind", address, "--directory", root, str(UPSTREAM_PORT)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if subprocess.run(["nsenter", "--net=/run/netns/" + ns, "--", "/usr/bin/python3", "-c",
                               "import socket; socket.create_connection((%r, %d), 1)" % (address, UPSTREAM_PORT)],
                              capture_output=True).returncode == 0:
                return proc
            time.sleep(0.2)
        proc.kill()
        proc.wait()
        raise RuntimeError("the upstream HTTP server did not start")

    def login(self, node, user):
        node.token = self.tokens[user]
        node.http.headers["Authorization"] = "token " + node.token

    def session(self, user):
        s = requests.Session()
        s.trust_env = False
        s.headers["Authorization"] = "token " + self.tokens[user]
        return s

    def node_of(self, kernel_id):
        rows = self.nodes["a"].db_query("SELECT node, state, reason FROM kernels WHERE id = ?", kernel_id)
        return rows[0] if rows else None

    def remove(self):
        for node in self.nodes.values():
            try:
                node.stop()
            except Exception:  # noqa: BLE001 - clean up the rest regardless
                pass
        if self.upstream:
            self.upstream.kill()
            self.upstream.wait()
        if self.pg:
            self.pg.remove()
        self.net.remove()
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        pytest.fail("the cluster test makes network namespaces: run it as root")
    c = Cluster()
    yield c
    c.remove()


def start(s, node, **body):
    r = s.post(node.url + "api/kernels", json=body, timeout=120)
    assert r.status_code == 201, (node.name, r.status_code, r.text, node.log_tail())
    return r.json()


def execute(s, node, kid, code):
    r = s.post(node.url + "api/kernels/%s/execute" % kid, json={"code": code}, timeout=120)
    assert r.status_code == 200, (node.name, r.status_code, r.text)
    return r.json()


def stdout_of(rep):
    return "".join(o.get("text", "") for o in rep["outputs"] if o.get("type") == "stream" and o.get("name") == "stdout")


def others(cluster, name):
    return [n for k, n in cluster.nodes.items() if k != name]


def test_nodes_join_and_a_peer_without_the_cluster_ca_is_cut_at_the_handshake(cluster):
    rows = cluster.nodes["a"].db_query("SELECT id, address, state FROM nodes ORDER BY id")
    assert [(r[0], r[2]) for r in rows] == [("a", "up"), ("b", "up"), ("c", "up")], rows
    assert rows[0][1] == cluster.nodes["a"].address + ":9443"
    rogue_key, rogue_cert = make_ca(cluster.tmp, "rogue")
    for client_cert in (None, (rogue_cert, rogue_key)):
        ctx = ssl.create_default_context(cafile=cluster.ca)
        ctx.check_hostname = False
        if client_cert:
            ctx.load_cert_chain(client_cert[0], client_cert[1])
        with socket.create_connection((cluster.nodes["b"].address, 9443), timeout=10) as raw:
            with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
                with ctx.wrap_socket(raw) as tls:
                    # TLS 1.3: the server judges the client's certificate after the client's handshake ends.
                    tls.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\nAuthorization: token " +
                                cluster.tokens["alice"].encode() + b"\r\n\r\n")
                    data = tls.recv(100)
                    if not data:
                        raise ConnectionResetError("closed without an answer")
                    pytest.fail("a peer without a certificate of the cluster CA was answered: %r" % data)


def test_start_on_a_attach_from_b_and_execute_through_c(cluster):
    s = cluster.session("alice")
    a = cluster.nodes["a"]
    kid = start(s, a)["id"]
    holder = cluster.node_of(kid)[0]
    assert holder in NAMES
    far = others(cluster, holder)  # neither holds it: both relay
    ws = KernelWS(far[0].url, cluster.tokens["alice"], kid, protocol="v1")
    try:
        assert ws.execute("x = 6 * 7").reply["content"]["status"] == "ok"
        rep = execute(s, far[1], kid, "print(x)")
        assert rep["status"] == "ok" and stdout_of(rep).strip() == "42", rep
        # The execute through the third node is broadcast on iopub to the socket held through the second.
        ws.wait_for(lambda m: m["header"]["msg_type"] == "stream" and "42" in m["content"].get("text", ""))
    finally:
        ws.close()
    for node in cluster.nodes.values():
        r = s.get(node.url + "api/kernels/" + kid, timeout=30)
        assert r.status_code == 200 and r.json()["id"] == kid, (node.name, r.status_code, r.text)
        assert kid in [k["id"] for k in s.get(node.url + "api/kernels", timeout=30).json()], node.name
    r = s.delete(far[1].url + "api/kernels/" + kid, timeout=60)
    assert r.status_code == 204, r.text
    assert cluster.node_of(kid) is None


def tcp_active_opens(node):
    """TCP connections opened from inside node's namespace so far (Tcp ActiveOpens of /proc/net/snmp,
    which counts per network namespace), closed ones included."""
    rows = [line.split() for line in sh("nsenter", "--net=/run/netns/" + node.ns, "--", "cat",
                                        "/proc/net/snmp").splitlines() if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("ActiveOpens")])


def test_forwarded_requests_reuse_their_connections_to_the_kernels_node(cluster):
    """A request forwarded to the node holding its kernel goes on a kept-alive connection
    (gateway/http/peer_connections.h), not on a TCP and TLS handshake of its own. Old binary: "60
    connections opened from node b's namespace for 60 forwarded requests"."""
    s = cluster.session("bob")
    kid = start(s, cluster.nodes["a"], workspace="kept")["id"]
    holder = cluster.nodes[cluster.node_of(kid)[0]]
    via = others(cluster, holder.name)[0]
    try:
        assert execute(s, via, kid, "n = 0")["status"] == "ok"  # the kernel is up, its node reached once
        before = tcp_active_opens(via)
        for i in range(60):
            if i % 2:
                r = s.get(via.url + "api/kernels/" + kid, timeout=30)
                assert r.status_code == 200 and r.json()["id"] == kid, (r.status_code, r.text)
            else:
                assert execute(s, via, kid, "n += 1")["status"] == "ok"
        opened = tcp_active_opens(via) - before
        kept = sh("nsenter", "--net=/run/netns/" + via.ns, "--", "ss", "-tnH", "state", "established",
                  "dst", holder.address + ":9443")
        # Every outgoing connection of via's namespace counts: its database connections too, if any.
        assert opened <= 4, ("%d connections opened from node %s's namespace for 60 forwarded requests to "
                             "node %s; established now:\n%s" % (opened, via.name, holder.name, kept))
        assert kept.strip(), "no connection from node %s to node %s kept" % (via.name, holder.name)
        rep = execute(s, via, kid, "print(n)")
        assert stdout_of(rep).strip() == "30", rep  # each POST acted on once
    finally:
        s.delete(via.url + "api/kernels/" + kid, timeout=60)


def test_a_networked_kernel_placed_on_another_node_goes_out_through_that_nodes_proxy(cluster):
    if os.environ.get("CELLGATE_TEST_SPAWNER", "plain") != "jail":
        pytest.skip("the egress proxy runs with the jail spawner only")
    s = cluster.session("bob")
    a = cluster.nodes["a"]
    started = []
    try:
        # Placement spreads: within three starts through a, one lands on another node.
        for i in range(3):
            k = start(s, a, name="py-net", workspace="net%d" % i)
            started.append(k["id"])
            if cluster.node_of(k["id"])[0] != "a":
                break
        kid = started[-1]
        holder = cluster.node_of(kid)[0]
        assert holder != "a", [cluster.node_of(x) for x in started]
        assert k["network"]["mode"] == "allowlist" and k["network"]["allow"][0]["host"] == UPSTREAM_HOST, k
        for node in cluster.nodes.values():  # the policy, as every node shows the kernel
            r = s.get(node.url + "api/kernels/" + kid, timeout=30)
            assert r.status_code == 200 and r.json()["network"] == k["network"], (node.name, r.text)
            listed = [x for x in s.get(node.url + "api/kernels", timeout=30).json() if x["id"] == kid]
            assert listed and listed[0]["network"] == k["network"], (node.name, listed)
        via = others(cluster, holder)[-1]
        code = ("import urllib.request\n"
                "print(urllib.request.urlopen('http://%s:%d/hello', timeout=20).read().decode())"
                % (UPSTREAM_HOST, UPSTREAM_PORT))
        rep = execute(s, via, kid, code)
        assert stdout_of(rep).strip() == "hello from the upstream", rep
        # Not in the policy: refused by the holder's proxy, whichever node the code came through.
        rep = execute(s, via, kid, "import urllib.request\n"
                                   "try:\n    urllib.request.urlopen('http://other.cluster.test:%d/', timeout=20)\n"
                                   "except Exception as e:\n    print(e)" % UPSTREAM_PORT)
        assert "cellgate egress" in stdout_of(rep), rep
        r = s.get(via.url + "api/kernels/%s/egress?recent=5" % kid, timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["counters"]["connections"] >= 1 and r.json()["counters"]["refused"] >= 1, r.json()
    finally:
        for kid in started:
            s.delete(cluster.nodes["b"].url + "api/kernels/" + kid, timeout=60)


def test_two_users_on_different_nodes_get_404_for_each_others_ids(cluster):
    alice, bob = cluster.session("alice"), cluster.session("bob")
    kid = start(alice, cluster.nodes["a"])["id"]
    bobs = start(bob, cluster.nodes["b"])["id"]
    try:
        for node in cluster.nodes.values():
            for path in ("api/kernels/" + kid, "api/kernels/" + kid + "/interrupt"):
                r = bob.post(node.url + path, timeout=30) if path.endswith("interrupt") else bob.get(node.url + path, timeout=30)
                assert r.status_code == 404, (node.name, path, r.status_code, r.text)
            assert alice.get(node.url + "api/kernels/" + bobs, timeout=30).status_code == 404
            assert kid not in [k["id"] for k in bob.get(node.url + "api/kernels", timeout=30).json()]
            assert bob.delete(node.url + "api/kernels/" + kid, timeout=30).status_code == 404
            # Only a node may name a placed row: a client that tries is refused.
            r = bob.post(node.url + "api/kernels", json={}, headers={"X-Cellgate-Placed": kid}, timeout=30)
            assert r.status_code == 400, (r.status_code, r.text)
    finally:
        alice.delete(cluster.nodes["c"].url + "api/kernels/" + kid, timeout=60)
        bob.delete(cluster.nodes["c"].url + "api/kernels/" + bobs, timeout=60)


def test_a_session_deleted_through_another_node_shuts_its_kernel_down_where_it_runs(cluster):
    s = cluster.session("alice")
    a = cluster.nodes["a"]
    spec = s.get(a.url + "api/kernelspecs", timeout=30).json()["default"]
    r = s.post(a.url + "api/sessions", json={"path": "gone.ipynb", "type": "notebook", "name": "",
                                             "kernel": {"name": spec}}, timeout=120)
    assert r.status_code == 201, r.text
    sid, kid = r.json()["id"], r.json()["kernel"]["id"]
    holder = cluster.node_of(kid)[0]
    via = others(cluster, holder)[0]
    r = s.delete(via.url + "api/sessions/" + sid, timeout=60)
    assert r.status_code == 204, r.text
    # As jupyter_server does: the session's kernel is shut down, on the node that ran it.
    assert cluster.node_of(kid) is None, cluster.node_of(kid)
    for node in cluster.nodes.values():
        assert s.get(node.url + "api/sessions/" + sid, timeout=30).status_code == 404, node.name
        assert s.get(node.url + "api/kernels/" + kid, timeout=30).status_code == 404, node.name


def test_a_quota_is_counted_across_nodes(cluster):
    s = cluster.session("carol")
    ids = [start(s, cluster.nodes[n], workspace="q" + n)["id"] for n in ("a", "b")]
    try:
        r = s.post(cluster.nodes["c"].url + "api/kernels", json={"workspace": "qc"}, timeout=60)
        assert r.status_code == 403, (r.status_code, r.text)
        assert r.json()["message"] == "quota exceeded: max_kernels (2) for user carol"
    finally:
        for kid in ids:
            assert s.delete(cluster.nodes["c"].url + "api/kernels/" + kid, timeout=60).status_code == 204


def test_placement_spreads_30_kernels_over_the_three_nodes(cluster):
    s = cluster.session("dave")
    ids = []
    try:
        for i in range(30):
            node = cluster.nodes[NAMES[i % 3]]
            ids.append(start(s, node, workspace="spread%d" % i)["id"])
        per_node = {}
        for kid in ids:
            per_node[cluster.node_of(kid)[0]] = per_node.get(cluster.node_of(kid)[0], 0) + 1
        assert per_node == {"a": 10, "b": 10, "c": 10}, per_node
        # Each node reports what it runs in its heartbeat.
        time.sleep(LEASE / 5 * 2)
        rows = dict(cluster.nodes["a"].db_query("SELECT id, kernels FROM nodes"))
        assert all(rows[n] >= 10 for n in NAMES), rows
    finally:
        for kid in ids:
            s.delete(cluster.nodes["a"].url + "api/kernels/" + kid, timeout=60)


def test_postgres_restarted_under_load_fails_clearly_then_recovers(cluster):
    s = cluster.session("alice")
    kid = start(s, cluster.nodes["a"])["id"]
    r = s.post(cluster.nodes["b"].url + "api/sessions", json={"path": "pg.ipynb", "type": "notebook",
                                                               "kernel": {"id": kid}}, timeout=60)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert r.json()["kernel"]["id"] == kid
    statuses, stop = [], threading.Event()

    def load():
        while not stop.is_set():
            for node in cluster.nodes.values():
                for path in ("api/kernels", "api/sessions"):
                    try:
                        r = s.get(node.url + path, timeout=20)
                        # A list while the database is away is a 503, never an empty 200.
                        missing = r.status_code == 200 and (kid if path == "api/kernels" else sid) not in r.text
                        statuses.append((-1 if missing else r.status_code, node.name + " " + path + " " + r.text))
                    except requests.RequestException as e:
                        statuses.append((0, str(e)))

    t = threading.Thread(target=load, daemon=True)
    t.start()
    time.sleep(1)
    cluster.pg.restart(mode="immediate")
    time.sleep(2)
    stop.set()
    t.join(30)
    bad = [(c, b) for c, b in statuses if c not in (200, 503)]
    assert not bad, bad[:5]
    for c, b in statuses:
        if c == 503:
            assert "state database unavailable" in b, b
    assert any(c == 503 for c, _ in statuses), statuses[-5:]  # the outage was seen
    deadline = time.monotonic() + 30
    while True:
        codes = [s.get(n.url + "api/kernels", timeout=20).status_code for n in cluster.nodes.values()]
        if codes == [200, 200, 200] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert codes == [200, 200, 200], codes
    # Nobody was declared lost over the outage, and the kernel lives on.
    time.sleep(LEASE + 2)
    rows = cluster.nodes["a"].db_query("SELECT id, state FROM nodes ORDER BY id")
    assert [r[1] for r in rows] == ["up", "up", "up"], rows
    rep = execute(s, cluster.nodes["b"], kid, "print(1 + 1)")
    assert stdout_of(rep).strip() == "2", rep
    for node in cluster.nodes.values():  # the session outlived the outage, seen from every node
        assert sid in [x["id"] for x in s.get(node.url + "api/sessions", timeout=30).json()], node.name
    assert s.delete(cluster.nodes["c"].url + "api/sessions/" + sid, timeout=60).status_code == 204
    s.delete(cluster.nodes["c"].url + "api/kernels/" + kid, timeout=60)


def test_kill_9_a_nodes_gateway_and_restart_it_its_kernels_keep_their_memory(cluster):
    s = cluster.session("alice")
    kid = start(s, cluster.nodes["a"], workspace="kill9")["id"]
    holder = cluster.nodes[cluster.node_of(kid)[0]]
    via = others(cluster, holder.name)[0]
    assert execute(s, via, kid, "kept = 41")["status"] == "ok"
    holder.kill_gateway()
    holder.start()
    rep = execute(s, via, kid, "print(kept + 1)")
    assert rep["status"] == "ok" and stdout_of(rep).strip() == "42", rep
    assert cluster.node_of(kid)[1] != "dead"
    s.delete(via.url + "api/kernels/" + kid, timeout=60)


def test_a_node_cut_off_has_its_kernels_reported_dead_within_the_lease_while_the_others_serve(cluster):
    s = cluster.session("alice")
    kids = [start(s, cluster.nodes["a"], workspace="cut%d" % i)["id"] for i in range(3)]
    by_node = {cluster.node_of(k)[0]: k for k in kids}
    assert len(by_node) == 3, by_node  # one on each node
    victim = cluster.nodes["c"]
    survivors = others(cluster, "c")
    # Sockets through the survivors, relayed to c, in both protocols.
    relayed = [KernelWS(survivors[0].url, cluster.tokens["alice"], by_node["c"], protocol="v1"),
               KernelWS(survivors[1].url, cluster.tokens["alice"], by_node["c"], protocol="legacy")]
    for ws in relayed:
        assert ws.execute("1 + 1").reply["content"]["status"] == "ok"
    cut_at = time.monotonic()
    cluster.net.link("c", False)
    try:
        deadline = cut_at + LEASE + 2 * LEASE / 5 + 5
        model = None
        while time.monotonic() < deadline:
            r = s.get(survivors[0].url + "api/kernels/" + by_node["c"], timeout=30)
            # Until the lease runs out the node is only unreachable: a clear 503 or 504, never a hang.
            assert r.status_code in (200, 503, 504), r.text
            assert set(r.json()) >= ({"id"} if r.status_code == 200 else {"reason", "message"}), r.text
            if r.status_code != 200:
                continue
            model = r.json()
            if model["execution_state"] == "dead":
                break
            time.sleep(0.25)
        took = time.monotonic() - cut_at
        assert model["execution_state"] == "dead" and model["reason"] == "node lost", (model, took)
        assert took >= LEASE - 1, took  # not before the lease
        # The other nodes' kernels keep serving, through either survivor.
        for name in ("a", "b"):
            rep = execute(s, survivors[1], by_node[name], "print('still here')")
            assert stdout_of(rep).strip() == "still here", rep
        assert [r[0] for r in cluster.nodes["a"].db_query("SELECT id FROM nodes WHERE state = 'lost'")] == ["c"]
        # The relayed sockets are told as for a kernel that died here: iopub status dead with the
        # reason, an error naming it, then the close (within a heartbeat of the relaying node).
        for ws in relayed:
            dead = ws.wait_for(lambda m: m.get("channel") == "iopub" and msg_type(m) == "status"
                               and m["content"]["execution_state"] == "dead", timeout=2 * LEASE / 5 + 10)
            assert dead["content"]["reason"] == "node lost", dead
            err = ws.wait_for(lambda m: msg_type(m) == "error", timeout=10)
            assert err["content"]["ename"] == "KernelDied" and err["content"]["evalue"] == "node lost", err
            with pytest.raises(websocket.WebSocketConnectionClosedException):
                while True:
                    ws.recv(timeout=10)
    finally:
        for ws in relayed:
            ws.close()
        cluster.net.link("c", True)
    # Back on the network, the lost node rejoins as a new incarnation and ends what was declared dead.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = victim.db_query("SELECT state FROM nodes WHERE id = 'c'")
        if rows and rows[0][0] == "up" and cluster.node_of(by_node["c"]) is None:
            break
        time.sleep(0.5)
    assert rows[0][0] == "up", rows
    assert cluster.node_of(by_node["c"]) is None, cluster.node_of(by_node["c"])
    for name in ("a", "b"):
        s.delete(survivors[0].url + "api/kernels/" + by_node[name], timeout=60)


def test_a_workspace_is_restored_on_another_node_after_its_node_is_lost(cluster):
    s = cluster.session("dave")
    a = cluster.nodes["a"]
    kid = start(s, a, workspace="lab")["id"]
    holder = cluster.nodes[cluster.node_of(kid)[0]]
    survivors = others(cluster, holder.name)
    # Each execute's snapshot is taken before its reply: what the cell wrote is in the shared store.
    rep = execute(s, a, kid, "open('results.csv', 'w').write('run,score\\n1,0.93\\n'); print('saved')")
    assert stdout_of(rep).strip() == "saved", rep
    published = os.path.join(cluster.store, "manifests", "dave", "lab")
    assert os.listdir(published), "no manifest published to the shared store"
    cluster.net.link(holder.name, False)
    try:
        deadline = time.monotonic() + LEASE + 2 * LEASE / 5 + 15
        state = None
        while time.monotonic() < deadline:
            r = s.get(survivors[0].url + "api/kernels/" + kid, timeout=30)
            if r.status_code == 200:
                state = r.json()
                if state["execution_state"] == "dead":
                    break
            time.sleep(0.5)
        assert state and state["execution_state"] == "dead" and state["reason"] == "node lost", state
        # The workspace's node is lost: the next kernel in it starts on a survivor, from its newest snapshot.
        again = start(s, survivors[1], workspace="lab")["id"]
        assert cluster.node_of(again)[0] in [n.name for n in survivors], cluster.node_of(again)
        rep = execute(s, survivors[0], again, "print(open('results.csv').read(), end='')")
        assert stdout_of(rep) == "run,score\n1,0.93\n", rep
        s.delete(survivors[0].url + "api/kernels/" + again, timeout=60)
    finally:
        cluster.net.link(holder.name, True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = holder.db_query("SELECT state FROM nodes WHERE id = ?", holder.name)
        if rows and rows[0][0] == "up" and cluster.node_of(kid) is None:
            break
        time.sleep(0.5)
    assert rows[0][0] == "up" and cluster.node_of(kid) is None, (rows, cluster.node_of(kid))


def test_gc_on_one_node_keeps_what_the_other_nodes_snapshotted_and_pinned(cluster):
    """`cellgate gc --store-dir` run on a node that holds neither the workspace nor its artifact keeps
    both (another node's published manifest, the pin beside the store), and removes an object nothing
    names once it is older than --min-age; a younger one stays (a manifest may not be published yet).
    Before, gc on a shared store refused and deleted nothing."""
    import hashlib
    import io
    import tarfile
    s = cluster.session("alice")
    a = cluster.nodes["a"]
    kid = start(s, a, workspace="gcw")["id"]
    holder = cluster.nodes[cluster.node_of(kid)[0]]
    keep, art = secrets.token_hex(16), secrets.token_hex(16)
    rep = execute(s, holder, kid, "open('keep.txt', 'w').write(%r); open('art.txt', 'w').write(%r)" % (keep, art))
    snap = rep["workspace"]["snapshot"]
    r = s.post(holder.url + "api/workspaces/gcw/artifacts", json={"path": "art.txt"}, timeout=60)
    assert r.status_code == 201, r.text
    artifact = r.json()["id"]
    assert os.listdir(os.path.join(cluster.store, "pins", "artifact", "alice"))

    def orphan(data):
        h = hashlib.sha256(data).hexdigest()
        path = os.path.join(cluster.store, "objects", h[:2], h[2:])
        with open(path, "wb") as f:
            f.write(data)
        return path
    old_path = orphan(b"named by nothing, written long ago " + secrets.token_bytes(8))
    young_path = orphan(b"named by nothing yet " + secrets.token_bytes(8))
    two_hours_ago = time.time() - 7200
    os.utime(old_path, (two_hours_ago, two_hours_ago))

    gc_node = others(cluster, holder.name)[0]
    out = subprocess.run([gc_node.binary, "gc", "--data-dir", gc_node.data_dir, "--store-dir", cluster.store,
                          "--min-age", "600"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    assert "objects removed" in out.stdout, out.stdout
    assert not os.path.exists(old_path)
    assert os.path.exists(young_path)
    os.unlink(young_path)

    # The holder's snapshot and the artifact are whole: read back from the store.
    r = s.get(holder.url + "api/workspaces/gcw/snapshots/%s/archive" % snap, timeout=60)
    assert r.status_code == 200, r.text[:300]
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = [n.lstrip("./") for n in tar.getnames()]
        assert "keep.txt" in names, names
        assert tar.extractfile(tar.getmember(tar.getnames()[names.index("keep.txt")])).read() == keep.encode()
    r = s.get(holder.url + "api/artifacts/" + artifact, timeout=60)
    assert r.status_code == 200 and r.content == art.encode(), (r.status_code, r.content[:100])
    s.delete(holder.url + "api/kernels/" + kid, timeout=60)


def test_a_node_that_cannot_renew_its_lease_stops_serving_its_kernels_before_it_may_be_declared_lost(cluster):
    s = cluster.session("alice")
    b = cluster.nodes["b"]
    started, kid = [], None
    try:
        for i in range(4):  # placement spreads: within four starts through b, one lands on b
            started.append(start(s, b, workspace="fence%d" % i)["id"])
            if cluster.node_of(started[-1])[0] == "b":
                kid = started[-1]
                break
        assert kid, [cluster.node_of(k) for k in started]
        # A client connected to b itself: its messages need no database, only the lease.
        ws = KernelWS(b.url, cluster.tokens["alice"], kid, protocol="v1")
        assert ws.execute("n = 0").reply["content"]["status"] == "ok"
        # A thread of the kernel's own writes to its workspace ten times a second: what goes on with no
        # client asking, and what must stop once the node may be declared lost (the workspace may be
        # restored on another node).
        ticker = ("import threading, time\n"
                  "def tick():\n"
                  "    while True:\n"
                  "        open('tick.txt', 'w').write(repr(time.time()))\n"
                  "        time.sleep(0.1)\n"
                  "threading.Thread(target=tick, daemon=True).start()")
        assert ws.execute(ticker).reply["content"]["status"] == "ok"
        tick_file = os.path.join(b.data_dir, "workspaces", "alice", "fence%d" % (len(started) - 1), "tree", "tick.txt")

        def ticks(seconds):
            seen = set()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                try:
                    with open(tick_file) as f:
                        seen.add(f.read())
                except OSError:
                    pass
                time.sleep(0.1)
            return len(seen)
        assert ticks(1.5) >= 5, tick_file
        cut_at = time.monotonic()
        # b alone loses the database; the clients still reach it.
        sh("ip", "netns", "exec", b.ns, "ip", "route", "add", "blackhole", cluster.pg_address + "/32")
        try:
            served, closed = [], False
            while time.monotonic() < cut_at + 3 * LEASE:
                try:
                    rep = ws.execute("n += 1", timeout=3 * LEASE)
                except websocket.WebSocketConnectionClosedException:
                    closed = True
                    break
                assert rep.reply["content"]["status"] == "ok", rep.reply
                served.append(time.monotonic() - cut_at)
                time.sleep(0.5)
            # It stopped acting for its kernel, and not after the others could have declared it lost
            # (its last renewal was before the cut): never two nodes acting for one kernel.
            assert closed, served
            assert not served or max(served) < LEASE, served
            close_frame = getattr(ws, "close_frame", b"") or b""
            assert b"lease" in close_frame and int.from_bytes(close_frame[:2], "big") == 1001, close_frame
            # Fenced, its kernels are frozen: the kernel's own thread writes nothing more.
            time.sleep(1)
            assert ticks(3) <= 1, "a fenced node's kernel went on writing to its workspace"
            deadline = cut_at + LEASE + 2 * LEASE / 5 + 15
            while time.monotonic() < deadline:
                r = s.get(cluster.nodes["a"].url + "api/kernels/" + kid, timeout=30)
                if r.status_code == 200 and r.json()["execution_state"] == "dead":
                    break
                time.sleep(0.5)
            assert r.json().get("reason") == "node lost", r.text
        finally:
            ws.close()
            sh("ip", "netns", "exec", b.ns, "ip", "route", "del", "blackhole", cluster.pg_address + "/32", check=False)
        # b gets the database back, finds itself lost, rejoins and ends what was declared dead.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            rows = b.db_query("SELECT state FROM nodes WHERE id = 'b'")
            if rows and rows[0][0] == "up" and cluster.node_of(kid) is None:
                break
            time.sleep(0.5)
        assert rows[0][0] == "up" and cluster.node_of(kid) is None, (rows, cluster.node_of(kid))
        r = s.post(b.url + "api/kernels/%s/execute" % started[0], json={"code": "1"}, timeout=60)
        assert r.status_code in (200, 404), r.text  # serving again (404: that one was b's, ended too)
    finally:
        for k in started:
            s.delete(cluster.nodes["a"].url + "api/kernels/" + k, timeout=60)


def test_a_node_whose_database_is_cut_keeps_serving_its_other_kernels_until_its_fence(cluster):
    """b alone loses the database (a blackhole route: its statements hang, as behind a partition). Until
    its fence goes down (6 s after its last renewal), what needs no database is served at once: an
    execute whose snapshot's index row waits on the database holds its own reply, and nothing else; the
    heartbeat holds its own thread. Old binary: both ran on the io thread, which every kernel's traffic
    waited on for a statement's deadline (10 s + 2 s)."""
    s = cluster.session("bob")
    b = cluster.nodes["b"]
    started, on_b = [], []
    sockets = []
    try:
        for i in range(9):  # placement spreads: two of these land on b
            started.append(start(s, b, workspace="hold%d" % i)["id"])
            if cluster.node_of(started[-1])[0] == "b":
                on_b.append(started[-1])
                if len(on_b) == 2:
                    break
        assert len(on_b) == 2, [cluster.node_of(k) for k in started]
        writer, other = (KernelWS(b.url, cluster.tokens["bob"], k, protocol="v1") for k in on_b)
        sockets = [writer, other]
        assert writer.execute("open('a.txt', 'w').write('0')").reply["content"]["status"] == "ok"
        assert other.execute("1 + 1").result_text() == "2"
        time.sleep(LEASE / 5)  # a renewal after the snapshot's index row: the fence is fresh
        cut_at = time.monotonic()
        sh("ip", "netns", "exec", b.ns, "ip", "route", "add", "blackhole", cluster.pg_address + "/32")
        try:
            writer.send("shell", "execute_request", {"code": "open('a.txt', 'w').write('1')", "silent": False,
                                                     "store_history": True, "user_expressions": {},
                                                     "allow_stdin": False, "stop_on_error": True})
            time.sleep(0.5)  # its snapshot is taken; its index row waits on the database
            began = time.monotonic()
            try:
                rep = other.execute("1 + 1", timeout=3 * LEASE)
            except websocket.WebSocketConnectionClosedException:
                pytest.fail("b's io thread answered another kernel's 1 + 1 only after its fence went down (the "
                            "socket closed %.1f s after the cut)" % (time.monotonic() - cut_at))
            took = time.monotonic() - began
            assert rep.result_text() == "2", rep.reply
            assert took < 2, "another kernel's 1 + 1 took %.1f s after b lost its database" % took
            began = time.monotonic()
            r = b.http.get(b.url + "healthz", timeout=3 * LEASE)
            took = time.monotonic() - began
            assert r.status_code == 200 and took < 2, (r.status_code, took)
            assert time.monotonic() - cut_at < LEASE * 3 / 5, "too slow to have checked before the fence"
        finally:
            sh("ip", "netns", "exec", b.ns, "ip", "route", "del", "blackhole", cluster.pg_address + "/32", check=False)
        # Back before its lease ran out: b renews, and serves its kernels again (the writer's reply came,
        # or, had the fence gone down first, its socket was closed and the kernel frozen, then thawed).
        deadline = time.monotonic() + 60
        while True:
            r = s.post(b.url + "api/kernels/%s/execute" % on_b[1], json={"code": "print(2 + 2)"}, timeout=60)
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert r.status_code == 200 and stdout_of(r.json()).strip() == "4", (r.status_code, r.text)
        assert [row[1] for row in b.db_query("SELECT id, state FROM nodes WHERE id = 'b'")] == ["up"]
    finally:
        for ws in sockets:
            ws.close()
        for k in started:
            s.delete(cluster.nodes["a"].url + "api/kernels/" + k, timeout=60)


def test_a_routed_request_waiting_on_a_locked_kernels_table_holds_no_other_clients_traffic(cluster):
    """A request for a kernel another node holds reads the kernel's row (and its node's) to know where
    to send it. While the database does not answer that read (here the kernels table is locked, as a
    migration or a VACUUM FULL would lock it, for 3 s: less than the gateway's lock_timeout), that request
    waits, and the node goes on serving its other clients: a kernel's WebSocket answers `1 + 1` at once.
    Once the lock goes, the request is forwarded and answered. (The read ran on the io thread before,
    which every client of the node shares.)"""
    import psycopg2
    s = cluster.session("dave")
    started, by_node = [], {}
    ws, con, releaser = None, None, None
    try:
        for i in range(6):  # placement spreads: two of these land on two nodes
            started.append(start(s, cluster.nodes["a"], workspace="routed%d" % i)["id"])
            by_node.setdefault(cluster.node_of(started[-1])[0], started[-1])
            if len(by_node) == 2:
                break
        assert len(by_node) == 2, [cluster.node_of(k) for k in started]
        (near_name, near_kid), (far_name, far_kid) = sorted(by_node.items())
        near = cluster.nodes[near_name]
        ws = KernelWS(near.url, cluster.tokens["dave"], near_kid, protocol="v1")
        assert ws.execute("1 + 1").result_text() == "2"
        r = s.get(near.url + "api/kernels/" + far_kid, timeout=30)
        assert r.status_code == 200 and r.json()["id"] == far_kid, (r.status_code, r.text)
        hold = 3.0
        con = psycopg2.connect(cluster.url)
        con.cursor().execute("LOCK TABLE kernels IN ACCESS EXCLUSIVE MODE")
        # Released on time whatever the node does meanwhile (an io thread that waits on the lock too).
        releaser = threading.Timer(hold, con.rollback)
        releaser.start()
        answer = {}

        def ask():
            began = time.monotonic()
            try:
                r = s.get(near.url + "api/kernels/" + far_kid, timeout=60)
                answer["status"], answer["body"] = r.status_code, r.text
            except requests.RequestException as e:
                answer["error"] = repr(e)
            answer["took"] = time.monotonic() - began

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        time.sleep(0.5)  # its token is checked (the users table is not locked); it waits on the kernel's row
        began = time.monotonic()
        rep = ws.execute("1 + 1", timeout=30)
        took = time.monotonic() - began
        releaser.join()
        asker.join(timeout=30)
        assert rep.result_text() == "2", rep.reply
        assert took < 1.5, ("a kernel's 1 + 1 over its open WebSocket on node %s took %.1f s while a request "
                            "routed to node %s waited on the kernels table" % (near_name, took, far_name))
        assert not asker.is_alive(), "the routed request was never answered"
        assert answer.get("status") == 200 and json.loads(answer["body"])["id"] == far_kid, answer
        assert answer["took"] > hold - 1.0, "the routed request did not wait on the lock: %.1f s" % answer["took"]
    finally:
        if releaser is not None:
            releaser.join()
        if con is not None:
            con.close()
        if ws is not None:
            ws.close()
        for k in started:
            s.delete(cluster.nodes["a"].url + "api/kernels/" + k, timeout=60)
