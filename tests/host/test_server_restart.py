"""After a server death: arenas that were running are ``interrupted`` in /history, resumable
from turns.jsonl (replay) or deletable; closed arenas are served from disk."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.host.server import create_app


def test_interrupted_arena_is_listed_resumed_and_deleted(tmp_path):
    first = TestClient(create_app(tmp_path))  # the server that "dies" (never closed, never told)
    made = []
    for _ in range(2):
        c = first.post("/api/arenas", json=payload(max_turns=6)).json()
        owner = keys_of(c)[0]
        first.post(f"/api/arenas/{c['arenaId']}/start", headers=owner)
        for _ in range(2):
            first.post(f"/api/arenas/{c['arenaId']}/tick", headers=owner)
        made.append(c)
    waiting = first.post("/api/arenas", json=payload()).json()  # never started: nothing to resume
    (a, b), expected = made, first.post(f"/api/arenas/{made[0]['arenaId']}/tick", headers=keys_of(made[0])[0]).json()
    # turn 3 of arena a as the first server played it; the restarted server resumes at turn 2
    lines = (tmp_path / a["arenaId"] / "turns.jsonl").read_text().splitlines()
    (tmp_path / a["arenaId"] / "turns.jsonl").write_text("\n".join(lines[:2]) + "\n")

    with TestClient(create_app(tmp_path)) as client:
        hist = {h["arenaId"]: h for h in client.get("/api/arenas/history").json()["arenas"]}
        assert {a["arenaId"], b["arenaId"]} <= set(hist) and waiting["arenaId"] not in hist
        assert hist[a["arenaId"]]["status"] == "interrupted" and hist[b["arenaId"]]["turnsPlayed"] == 2
        view = client.get(f"/api/arenas/{a['arenaId']}").json()
        assert view["status"] == "interrupted"
        owner_a, owner_b = keys_of(a)[0], keys_of(b)[0]
        assert client.post(f"/api/arenas/{a['arenaId']}/resume", json={}).status_code == 403
        assert client.post(f"/api/arenas/{a['arenaId']}/tick", headers=owner_a).status_code == 409
        assert client.get(f"/api/arenas/{a['arenaId']}/summary", headers=owner_a).status_code == 409
        r = client.post(f"/api/arenas/{a['arenaId']}/resume", headers=owner_a, json={})
        assert r.status_code == 200 and r.json()["status"] == "running" and r.json()["turn"] == 2, r.text
        again = client.post(f"/api/arenas/{a['arenaId']}/tick", headers=owner_a).json()["tick"]
        strip = lambda rec: {k: v for k, v in rec.items() if k != "decisions"}  # noqa: E731
        assert again["turn"] == 3 and strip(again) == strip(expected["tick"])  # the same turn 3, replayed state
        assert [d["wealth"] for d in again["decisions"]] == [d["wealth"] for d in expected["tick"]["decisions"]]
        summ = client.post(f"/api/arenas/{a['arenaId']}/close", headers=owner_a).json()
        assert summ["turnsPlayed"] == 3 and summ["victory"]["outcome"] == "open"
        assert client.get(f"/api/arenas/history/{a['arenaId']}/summary").json() == summ
        assert json.loads((tmp_path / a["arenaId"] / "meta.json").read_text())["status"] == "closed"
        # the other interrupted arena is deleted through the API
        assert client.delete(f"/api/arenas/{b['arenaId']}", headers=owner_b).json() == {"deleted": b["arenaId"]}
        assert not (tmp_path / b["arenaId"]).exists()
        assert b["arenaId"] not in {h["arenaId"] for h in client.get("/api/arenas/history").json()["arenas"]}
        # a closed arena: views and owner endpoints from disk, DELETE too
        assert client.get(f"/api/arenas/{a['arenaId']}").json()["status"] == "closed"
        own = client.get(f"/api/arenas/{a['arenaId']}/owner", headers=owner_a).json()
        assert own["lastTick"]["turn"] == 3 and own["status"] == "closed"
        assert client.get(f"/api/arenas/{a['arenaId']}/perturbations", headers=owner_a).json()["log"] == []
        assert client.get("/api/arenas", headers=owner_a).json()["arenas"][0]["arenaId"] == a["arenaId"]
        assert client.delete(f"/api/arenas/{a['arenaId']}", headers=owner_a).status_code == 200
    first.close()
