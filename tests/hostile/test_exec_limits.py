# SPDX-License-Identifier: Apache-2.0
# Hole 6 of issue 20: the execution limit (--execute-limit, or a user's own) was kept on the WebSocket
# path only: a 40 s cell run through POST /execute by a user with a 3 s limit finished with status ok,
# and so did tools/exec. It must hold on every path that runs code, whatever the request asks for.
import time

import hostile as h

SLOW = "import time\nfor i in range(30):\n    time.sleep(1)\nprint('finished')\n"


def test_the_execution_limit_holds_on_execute_and_tools_exec():
    t = h.jailed("--execute-limit", "3")
    try:
        t.start()
        kid = t.start_kernel()["id"]
        for path in ("api/kernels/%s/execute" % kid, "api/kernels/%s/tools/exec" % kid):
            started = time.monotonic()
            r = t.post(path, json={"code": SLOW, "timeout": 120}, timeout=120)
            took = time.monotonic() - started
            print("%s: %s after %.1f s" % (path, r.status_code, took))
            assert r.status_code == 200, r.text
            assert r.json()["status"] == "timeout", "a 30 s cell ran past the 3 s limit: %s" % r.text[:300]
            assert took < 15, took
            assert "finished" not in h.stdout_of(r.json()), "the cell ran to its end"
        # The kernel keeps its memory and serves the next request.
        out = h.stdout_of(h.execute(t, kid, "print(6*7)", timeout=60))
        assert out.strip() == "42", out
        t.delete_kernel(kid)
    finally:
        t.stop()
