# SPDX-License-Identifier: Apache-2.0
# Hole 7 of issue 20: --max-kernels and --max-kernels-per-user were 0 (no cap) unless set, so one
# user could start kernels until the host fell over. A gateway started with no caps given has both:
# past the per-user one (32), 403 with {"reason","message"} naming max_kernels, and the user's
# kernels already running keep serving.
import time

import hostile as h

PER_USER = 32


def test_one_user_cannot_start_kernels_without_end():
    t = h.jailed()  # the defaults: no cap is given
    try:
        t.start()
        started, r = [], None
        begun = time.monotonic()
        for _ in range(PER_USER + 8):
            r = t.post("api/kernels", json={}, timeout=120)
            if r.status_code != 201:
                break
            started.append(r.json()["id"])
        print("%d kernels started in %.1f s, then %s %s" % (len(started), time.monotonic() - begun,
                                                               r.status_code, r.text[:200]))
        assert r.status_code == 403, "one user started %d kernels with no cap given" % len(started)
        assert len(started) == PER_USER, len(started)
        body = r.json()
        assert set(body) >= {"reason", "message"} and "max_kernels" in body["message"], body
        # The refusal costs the user nothing already running.
        out = h.stdout_of(h.execute(t, started[0], "print(6*7)", timeout=60))
        assert out.strip() == "42", out
    finally:
        t.stop()
