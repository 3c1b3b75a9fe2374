# SPDX-License-Identifier: Apache-2.0
# Hole 8 of issue 20: tables every user shares could be filled by one: MCP sessions were a global LRU of
# 1024, so one user's initialize calls evicted everyone's; session rows per user had no cap. One user's
# excess must cost that user alone (their own oldest MCP session goes), or be refused with 429 naming
# the limit.
import hostile as h
import targets as tm

MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def with_users(*names):
    def add_users(t):
        t.tokens = {"admin": t.add_user("admin", "--admin")}
        for n in names:
            t.tokens[n] = t.add_user(n)
        t.token = t.tokens["admin"]
        t.http.headers["Authorization"] = "token " + t.token
    return add_users


def test_one_users_mcp_sessions_never_evict_anothers():
    t = h.jailed()
    t.pre_start = with_users("alice", "mallory")
    try:
        t.start()
        alice = tm.TokenClient(t, "alice", t.tokens["alice"])
        mallory = tm.TokenClient(t, "mallory", t.tokens["mallory"])
        r = alice.api("POST", "mcp", headers=MCP, json=INIT)
        assert r.status_code == 200, r.text
        sid = r.headers["Mcp-Session-Id"]
        codes = {}
        for _ in range(1100):
            code = mallory.api("POST", "mcp", headers=MCP, json=INIT).status_code
            codes[code] = codes.get(code, 0) + 1
        print("mallory's 1100 initialize calls:", codes)
        r = alice.api("POST", "mcp", headers=dict(MCP, **{"Mcp-Session-Id": sid}), json=TOOLS)
        assert r.status_code == 200, "alice's MCP session is gone after mallory's: %s %s" % (r.status_code, r.text)
    finally:
        t.stop()


def test_session_rows_per_user_are_capped():
    t = h.jailed(max_sessions_per_user=8)
    t.pre_start = with_users("mallory")
    try:
        t.start()
        mallory = tm.TokenClient(t, "mallory", t.tokens["mallory"])
        kid = mallory.api("POST", "api/kernels", json={"name": "python3"}).json()["id"]
        codes = []
        for i in range(40):
            r = mallory.api("POST", "api/sessions", json={"path": "n%d.ipynb" % i, "type": "notebook",
                                                         "kernel": {"id": kid}})
            codes.append(r.status_code)
            if r.status_code != 201:
                break
        print("mallory's sessions:", codes)
        assert codes[-1] == 429, "40 session rows for one user: %s" % codes
        assert "max_sessions_per_user" in r.json()["message"], r.text
        assert codes.count(201) == 8, codes
        mallory.api("DELETE", "api/kernels/" + kid)
    finally:
        t.stop()

