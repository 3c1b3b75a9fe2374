# SPDX-License-Identifier: BSD-3-Clause
# language_escape_test: the core of the escape battery (files, system(), sockets, /proc, environment)
# from the interpreters of the other kernels Debian packages, R and Octave, in every jail variant.
# The jail must hold whatever the language. With --no-jail the same probes run bare and must FAIL.
import os
import secrets
import socket
import threading

import harness
from escape_test import canary, sleeper, sleeper_survives
from harness import check, expect_held

LANGUAGES = {
    # case: (interpreter argv, probe file, the package that ships the interpreter)
    "r": (["/usr/bin/Rscript", "--vanilla"], "escape_probe.R", "/usr/bin/Rscript"),
    "octave": (["/usr/bin/octave-cli", "--no-gui", "--quiet", "--no-init-file"], "escape_probe.m", "/usr/bin/octave-cli"),
}


def http_listener(ctx):
    """A host listener on 127.0.0.1 that answers every connection with a small HTTP response (so both
    a plain connect and an HTTP client can tell they got through) and counts the connections."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            accepted.append(1)
            try:
                conn.settimeout(2)
                conn.recv(4096)
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nhost")
            except OSError:
                pass
            conn.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    ctx.cleanups.append(srv.close)
    return srv.getsockname()[1], accepted


def make_case(lang):
    argv, probe, interpreter = LANGUAGES[lang]

    def case(ctx):
        if not os.access(interpreter, os.X_OK):
            raise harness.Skip(f"{interpreter} is not installed (scripts/install-deps.sh installs it)")
        secret_file = canary(ctx, ctx.tmp, lang)
        proc, marker = sleeper(ctx)
        port, accepted = http_listener(ctx)
        name = f"CELLGATE_TEST_SECRET_{os.getpid()}"
        value = f"s3cr3t-{secrets.token_hex(8)}"
        host_env = dict(os.environ, **{name: value})
        # Jailed, the probe dir is bound at /langprobes; bare, the harness maps it back (see Run).
        expect_held(ctx, [*argv, f"/langprobes/{probe}", secret_file, str(proc.pid), marker, str(port), name, value],
                    host_env=host_env, opts=() if ctx.nojail else ("--ro-bind", f"{ctx.src}/langprobes:/langprobes"),
                    timeout=180)
        sleeper_survives(proc)
        check(not accepted, f"the host listener saw no connection ({len(accepted)})")
    return case


CASES = {lang: make_case(lang) for lang in LANGUAGES}

if __name__ == "__main__":
    harness.main(CASES)
