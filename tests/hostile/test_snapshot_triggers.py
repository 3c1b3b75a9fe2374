# SPDX-License-Identifier: Apache-2.0
# Hole 5 of issue 20: any execute_reply a kernel sent made the gateway walk and snapshot its workspace,
# even with no request pending: a kernel holds its own key, so a cell could forge replies in a loop
# and keep the gateway's shared pool walking its tree. Only the reply to an execute the gateway sent
# may trigger the after-execute snapshot.
import time

import hostile as h

FORGE = r'''
import time, uuid
k = get_ipython().kernel
ident = k._parent_ident["shell"]
for i in range(40):
    with open("/workspace/forged-%d.txt" % i, "w") as f:
        f.write("x" * 100)
    header = {"msg_id": uuid.uuid4().hex, "msg_type": "execute_request", "session": uuid.uuid4().hex,
              "username": "u", "date": "2026-01-01T00:00:00Z", "version": "5.3"}
    # On the socket itself, not the stream: a stream's sends wait for the io loop, which is busy
    # running this cell, so they would all leave together after it.
    k.session.send(k.shell_stream.socket, "execute_reply", {"status": "ok", "execution_count": 1},
                   parent={"header": header}, ident=ident)
    time.sleep(0.05)
print("forged", i + 1)
'''


def after_execute_snapshots(t):
    """The workspace's snapshots but the journal's baseline (labelled, taken once before the first execute)."""
    return [s for s in t.get("api/workspaces/default/snapshots").json()
            if not s.get("label", "").startswith("journal ")]


def test_replies_a_kernel_forges_trigger_no_snapshot():
    t = h.jailed()
    try:
        t.start()
        kid = t.start_kernel()["id"]
        before = len(after_execute_snapshots(t))
        out = h.stdout_of(h.execute(t, kid, FORGE, timeout=120))
        assert "forged 40" in out, out
        time.sleep(3)  # walks the forged replies queued would have finished by now
        made = len(after_execute_snapshots(t)) - before
        print("40 forged execute_replies, each after a file write: %d snapshots made" % made)
        # The execute's own reply snapshots once (whatever it wrote); forged ones add nothing.
        assert made <= 1, "forged replies made the gateway snapshot %d times" % made
        t.delete_kernel(kid)
    finally:
        t.stop()
