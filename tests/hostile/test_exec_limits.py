# SPDX-License-Identifier: Apache-2.0
# Hole 6 of issue 20: the execution limit (--execute-limit, or a user's own) was kept on the WebSocket
# path only: a 40 s cell run through POST /execute by a user with a 3 s limit finished with status ok,
# and so did tools/exec. It must hold on every path that runs code, whatever the request asks for.
import time

import hostile as h
import jupyter_ws as jws

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


# A cell holds its kernel's key and sockets, so it can send the execute_reply (and the idle) of the
# request it runs in, and run on. That must not end its time limit: the limit ends on both the reply
# and the idle, and the next execute's clock starts when the gateway sends it to a shell it counts as
# free, not at a busy the kernel may withhold (before, the next clock started only at the next
# request's busy, which a cell still running never lets out: a forged reply bought it all the time
# it wanted).
FORGE = r'''
import time
k = get_ipython().kernel
parent = k.get_parent("shell")
k.session.send(k.shell_stream.socket, "execute_reply", {"status": "ok", "execution_count": 1, "user_expressions": {}},
               parent=parent, ident=k._parent_ident["shell"])
if %s:
    k.session.send(k.iopub_socket, "status", {"execution_state": "idle"}, parent=parent, ident=k._topic("status"))
for i in range(25):
    time.sleep(1)
print("finished")
'''


def _execute_msg(kws, code):
    return kws.send("shell", "execute_request", {"code": code, "silent": False, "store_history": True,
                                                 "user_expressions": {}, "allow_stdin": False,
                                                 "stop_on_error": False})


def _printed_finished(kws, msg_id):
    return any(jws.parent_id(m) == msg_id and jws.msg_type(m) == "stream" and "finished" in m["content"]["text"]
               for m in kws.seen)


def _with_limited_kernel(attack):
    t = h.jailed("--execute-limit", "3")
    kws = None
    try:
        t.start()
        kid = t.start_kernel()["id"]
        kws = jws.KernelWS(t.url, t.token, kid)
        attack(kws)
        t.delete_kernel(kid)
    finally:
        if kws:
            kws.close()
        t.stop()


def test_a_forged_reply_does_not_end_the_cells_own_limit():
    def attack(kws):
        started = time.monotonic()
        a = _execute_msg(kws, FORGE % "False")
        kws.wait_for(lambda m: jws.parent_id(m) == a and jws.msg_type(m) == "execute_reply", 30)
        end = kws.wait_for(lambda m: jws.parent_id(m) == a and (
            jws.msg_type(m) == "error" or (jws.msg_type(m) == "stream" and "finished" in m["content"]["text"])), 60)
        took = time.monotonic() - started
        print("forged execute_reply: the cell ended with %s after %.1f s" % (jws.msg_type(end), took))
        assert not _printed_finished(kws, a), "a forged execute_reply ended the 3 s limit: the cell ran 25 s"
        assert took < 15, took
    _with_limited_kernel(attack)


def test_a_forged_reply_and_idle_do_not_hold_back_the_next_clock():
    def attack(kws):
        started = time.monotonic()
        a = _execute_msg(kws, FORGE % "True")
        kws.wait_for(lambda m: jws.parent_id(m) == a and jws.msg_type(m) == "execute_reply", 30)
        b = _execute_msg(kws, "print(6*7)")
        res = kws.collect(b, timeout=60)
        took = time.monotonic() - started
        print("forged execute_reply and idle: the next request answered %s after %.1f s"
              % (res.reply["content"]["status"], took))
        assert not _printed_finished(kws, a), "a forged execute_reply and idle let the cell run 25 s past its limit"
        assert took < 20, took
        assert res.reply["content"]["status"] == "ok" and res.stdout().strip() == "42", res.stdout()
    _with_limited_kernel(attack)
