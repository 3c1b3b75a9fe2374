#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# pg_server: a throwaway PostgreSQL server for tests: initdb in a temporary directory, listening on a
# unix socket there only (no TCP port, so runs never collide), as a non-root user, stopped and removed.
"""Usage as ctest's fixture (the URL of its maintenance database goes to STATE_DIR/url):

    pg_server.py start STATE_DIR      initdb + start; prints the URL
    pg_server.py stop STATE_DIR       stop (fast) and remove everything

Or from Python: PgServer().start(), .url(db), .create_database(), .restart(), .stop().
PostgreSQL refuses to run as root: as root, the server runs as Debian's `postgres` user (runuser);
otherwise as the caller. Authentication is `trust` on the socket, whose directory only that user
(and root) can enter.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

USER = "cellgate"  # the bootstrap superuser initdb creates


def _bin_dir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    for d in reversed(dirs):
        if os.access(os.path.join(d, "pg_ctl"), os.X_OK):
            return d
    raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql (apt install postgresql-15)")


class PgServer:
    def __init__(self, root=None, netns=None, listen=None, trust_net=None):
        # netns, listen, trust_net: the cluster test's server, run in a network namespace the test
        # made, listening on its address there too (TCP, so that cutting a node's link cuts it off
        # from the database), trusting connections from that test network only.
        self.netns, self.listen, self.trust_net = netns, listen, trust_net
        # Short, so that the socket path fits sun_path (108 bytes).
        self.root = root or tempfile.mkdtemp(prefix="cgpg-", dir="/tmp")
        self.data = os.path.join(self.root, "data")
        self.sock = os.path.join(self.root, "sock")
        self.log = os.path.join(self.root, "server.log")
        self.bin = _bin_dir()
        self.as_root = os.geteuid() == 0

    def _run(self, *cmd, check=True, timeout=120):
        argv = [os.path.join(self.bin, cmd[0]), *cmd[1:]]
        if self.as_root:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        if self.netns:
            argv = ["nsenter", "--net=/run/netns/" + self.netns, "--"] + argv
        out = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, cwd="/")
        if check and out.returncode != 0:
            raise RuntimeError("%s failed (rc=%d): %s%s\n%s" % (cmd[0], out.returncode, out.stdout.decode(errors="replace"),
                                                               out.stderr.decode(errors="replace"), self.log_tail()))
        return out

    def log_tail(self, n=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def url(self, db="postgres"):
        return "postgresql://%s@/%s?host=%s" % (USER, db, self.sock)

    def tcp_url(self, db="postgres"):
        return "postgresql://%s@%s:5432/%s?connect_timeout=3" % (USER, self.listen, db)

    def start(self, timeout=60):
        if not os.path.isdir(self.data):
            os.makedirs(self.sock, exist_ok=True)
            os.chmod(self.root, 0o700)
            if self.as_root:
                shutil.chown(self.root, "postgres", "postgres")
                shutil.chown(self.sock, "postgres", "postgres")
            self._run("initdb", "-D", self.data, "-U", USER, "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8",
                      "--no-sync")
            with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
                # Tests only: no durability (fsync), small memory, enough connections for -j2 runs of
                # gateways and unit tests, and no TCP listener at all.
                f.write("\nlisten_addresses = ''\nunix_socket_directories = '%s'\nfsync = off\n"
                        "synchronous_commit = off\nfull_page_writes = off\nshared_buffers = 16MB\n"
                        "max_connections = 200\nlog_min_messages = warning\n" % self.sock)
                if self.listen:
                    f.write("listen_addresses = '%s'\n" % self.listen)
            if self.trust_net:
                with open(os.path.join(self.data, "pg_hba.conf"), "a") as f:
                    f.write("host all all %s trust\n" % self.trust_net)
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", str(timeout), "start", timeout=timeout + 10)
        return self

    def stop(self, mode="fast"):
        if os.path.isdir(self.data):
            self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop", check=False)

    def restart(self, mode="fast"):
        self._run("pg_ctl", "-D", self.data, "-l", self.log, "-m", mode, "-w", "restart")

    def remove(self):
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def psql(self, sql, db="postgres"):
        out = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
                              "-d", self.url(db), "-c", sql], capture_output=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError("psql %r: %s" % (sql, out.stderr.decode(errors="replace")))
        return out.stdout.decode()

    def create_database(self, prefix="cg"):
        name = "%s_%s" % (prefix, uuid.uuid4().hex[:12])
        # A locale-aware collation (ICU), as a real server's would be: the schema must not depend on it.
        self.psql("CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' "
                  "LOCALE_PROVIDER icu ICU_LOCALE 'en-US'" % name)
        return name

    def drop_database(self, name):
        self.psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    state = argv[2]
    url_file = os.path.join(state, "url")
    root_file = os.path.join(state, "root")
    if argv[1] == "start":
        if os.path.exists(root_file):  # a run that was killed before its stop: start afresh
            with open(root_file) as f:
                PgServer(f.read().strip()).remove()
        os.makedirs(state, exist_ok=True)
        server = PgServer()
        with open(root_file, "w") as f:
            f.write(server.root)
        server.start()
        with open(url_file, "w") as f:
            f.write(server.url() + "\n")
        print(server.url())
        return 0
    if os.path.exists(root_file):
        with open(root_file) as f:
            PgServer(f.read().strip()).remove()
    for path in (url_file, root_file):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
