"""Issue 35: a private message reaches only its recipient and the owner. A spectator (the
token the key panel offers for sharing) sees that one was sent (sender, recipient, turn), not
its text, on every read path -- the dashboard tables, the stream's ``init`` and later events,
a closed arena's history (what the page's Replay draws) -- unless the owner chose at create to
show private text to spectators (``spectatorPrivateText``)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.host.server import create_app
from bdpd_jax.host.server.live import Subscriber

SECRET = "SECRET-private-9c1e"
SCRIPT = [
    {
        "harvest": 1.0,
        "actions": [
            {"tool": "send_private", "target": "b0", "text": SECRET},
            {"tool": "broadcast", "text": "hello all"},
        ],
    }
]


def _init(client: TestClient, aid: str, headers: dict) -> dict:
    """The stream's first event (``init``)."""
    with client.stream("GET", f"/api/arenas/{aid}/stream", headers=headers) as s:
        assert s.status_code == 200
        for line in s.iter_lines():
            if line.startswith("data: "):
                return json.loads(line[6:])
    raise AssertionError("no init event")


def _queued(sub: Subscriber) -> str:
    out = []
    while not sub.queue.empty():
        out.append(sub.queue.get_nowait() or "")
    return "".join(out)


def _private_rows(text: str) -> list[dict]:
    """Every private message row anywhere in a JSON body or a run of SSE events."""
    bodies = [json.loads(ln[6:]) for ln in text.splitlines() if ln.startswith("data: ")] or [json.loads(text)]
    rows: list[dict] = []

    def walk(o) -> None:
        if isinstance(o, dict):
            if o.get("scope") == "private" and "fromId" in o:
                rows.append(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for b in bodies:
        walk(b)
    return rows


@pytest.mark.parametrize("shown", [False, True])
def test_spectators_see_that_a_private_message_was_sent_not_its_text(tmp_path, shown) -> None:
    cfg = {**payload(max_turns=6), **({"spectatorPrivateText": True} if shown else {})}
    with TestClient(create_app(tmp_path)) as client:
        c = client.post("/api/arenas", json=cfg).json()
        aid, (owner, akey, spec) = c["arenaId"], keys_of(c)
        assert c["spectatorPrivateText"] is shown
        r = client.post(
            f"/api/arenas/{aid}/join", headers=akey, json={"agentType": "scripted", "name": "x", "script": SCRIPT}
        )
        assert r.status_code == 200, r.text
        client.post(f"/api/arenas/{aid}/start", headers=owner)
        lv = client.app.state.hub.live[aid]
        subs = {role: Subscriber(role) for role in ("owner", "spectator")}
        lv.subscribers.update(subs.values())  # the stream's later events, as each role's stream gets them
        for _ in range(3):
            assert client.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 200
        seen = {
            "dashboard": client.get(f"/api/arenas/{aid}/dashboard", headers=spec).text,
            "init": json.dumps(_init(client, aid, spec)),
            "tick events": _queued(subs["spectator"]),
            "page": client.get(f"/arenas/{aid}", headers=spec).text,
        }
        owner_events = _queued(subs["owner"])
        assert SECRET in owner_events and SECRET in client.get(f"/api/arenas/{aid}/dashboard", headers=owner).text
        assert client.get(f"/api/arenas/{aid}/dashboard", headers=spec).json()["spectatorPrivateText"] is shown
        client.post(f"/api/arenas/{aid}/close", headers=owner)
        # closed: history read back from the folder (the page's Replay draws it)
        seen["closed dashboard"] = client.get(f"/api/arenas/{aid}/dashboard", headers=spec).text
        seen["closed stream"] = json.dumps(_init(client, aid, spec))
        seen["closed public stream"] = json.dumps(_init(client, aid, {}))
        seen["history summary"] = client.get(f"/api/arenas/history/{aid}/summary").text
        assert SECRET in client.get(f"/api/arenas/{aid}/dashboard", headers=owner).text
        for where in ("dashboard", "init", "tick events", "closed dashboard"):
            rows = _private_rows(seen[where])
            assert rows, where  # that it was sent is shown ...
            assert all(m["fromId"] == "x" and m["to"] == "b0" and m["turn"] >= 1 for m in rows), where
            if not shown:  # ... its text is not
                assert all("text" not in m and m["textHidden"] for m in rows), where
        for where, text in seen.items():
            assert (SECRET in text) is (shown and where in ("dashboard", "init", "tick events", "closed dashboard")), (
                where
            )


def test_the_choice_survives_a_restart(tmp_path) -> None:
    """The owner's choice is kept with the key hashes (auth.json): an arena read back from its
    folder keeps it, and a folder from before the option hides private text."""
    with TestClient(create_app(tmp_path)) as client:
        made = [client.post("/api/arenas", json={**payload(), "spectatorPrivateText": s}).json() for s in (True, False)]
        for c in made:
            client.post(f"/api/arenas/{c['arenaId']}/start", headers=keys_of(c)[0])
    with TestClient(create_app(tmp_path)) as client:  # a new server: both are interrupted, on disk
        for c, s in zip(made, (True, False), strict=True):
            d = client.app.state.hub.find(c["arenaId"])
            assert d.status == "interrupted" and d.private_text is s and "spectatorPrivateText" not in d.hashes
        auth = tmp_path / made[0]["arenaId"] / "auth.json"
        auth.write_text(
            json.dumps({k: v for k, v in json.loads(auth.read_text()).items() if k != "spectatorPrivateText"})
        )
        assert client.app.state.hub.find(made[0]["arenaId"]).private_text is False
    with TestClient(create_app(tmp_path)) as client:
        r = client.post("/api/arenas", json={**payload(), "spectatorPrivateText": "yes"})
        assert r.status_code == 422 and "spectatorPrivateText" in r.text
