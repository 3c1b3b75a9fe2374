# SPDX-License-Identifier: Apache-2.0
# A workspace is held to its owner's limits whoever acts on it. A teacher (admin) who creates a
# student's workspace, uploads into it or restores a snapshot of it into a new one (?owner=) must not
# give it the teacher's own quota: the student's kernel would then write past the limit set for them
# (`cellgate user set-limits --workspace-bytes`), and the volume pays.
import hostile as h
import targets as tm

MIB = 1 << 20


def test_an_admin_acting_on_a_students_workspace_applies_the_students_quota():
    t = h.jailed(workspace_bytes="64M", workspace_volume="on")

    def add_users(t):
        t.tokens = {"teacher": t.add_user("teacher", "--admin"),
                    "carol": t.add_user("carol", "--workspace-bytes", "8M")}
        t.token = t.tokens["teacher"]
        t.http.headers["Authorization"] = "token " + t.token

    t.pre_start = add_users
    try:
        t.start()
        teacher = tm.TokenClient(t, "teacher", t.tokens["teacher"])
        carol = tm.TokenClient(t, "carol", t.tokens["carol"])
        r = teacher.api("POST", "api/workspaces?owner=carol", json={"name": "hw"})
        assert r.status_code == 201, (r.status_code, r.text)

        # The teacher's upload into carol's workspace counts against carol's 8 MiB, not the 64 MiB.
        r = teacher.api("PUT", "api/workspaces/hw/files/data.bin?owner=carol", data=b"y" * (16 * MIB))
        assert r.status_code == 507, ("an admin's 16 MiB upload into a workspace of a user limited to 8 MiB: %d %s"
                                      % (r.status_code, r.text[:300]))
        assert "workspace_bytes" in r.json()["message"] and str(8 * MIB) in r.json()["message"], r.text
        r = teacher.api("PUT", "api/workspaces/hw/files/small.bin?owner=carol", data=b"z" * MIB)
        assert r.status_code == 201, (r.status_code, r.text)

        # A snapshot of it restored by the teacher into a new workspace of carol's: carol's quota again.
        snap = teacher.api("POST", "api/workspaces/hw/snapshots?owner=carol", json={"label": "start"})
        assert snap.status_code == 201, snap.text
        r = teacher.api("POST", "api/workspaces/hw/snapshots/%s/restore?owner=carol" % snap.json()["id"],
                        json={"to": "hw2"})
        assert r.status_code == 201, (r.status_code, r.text)
        r = teacher.api("PUT", "api/workspaces/hw2/files/data.bin?owner=carol", data=b"y" * (16 * MIB))
        assert r.status_code == 507, ("an admin's 16 MiB upload into a restored workspace of a user limited to "
                                      "8 MiB: %d %s" % (r.status_code, r.text[:300]))

        # Carol reads what the teacher put there, and her own quota holds for her as before.
        assert carol.api("GET", "api/workspaces/hw2/files/small.bin").content == b"z" * MIB
        r = carol.api("PUT", "api/workspaces/hw/files/mine.bin", data=b"y" * (16 * MIB))
        assert r.status_code == 507, (r.status_code, r.text[:300])
    finally:
        t.stop()
