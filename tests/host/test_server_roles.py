"""Views by role (issue 14): a player (arena key) and the public learn nothing through any
endpoint that the player's observation hides; the owner sees everything, the spectator all but
private message text (tests/host/test_private_messages.py)."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from server_helpers import keys_of, payload, read_stream

from bdpd_jax.host.server import create_app

SECRET = "SECRET-7f3a"
HIDDEN_KEYS = {
    "stock",
    "decisions",
    "wealth",
    "actual",
    "requested",
    "metrics",
    "engine",
    "lastTick",
    "pacts",
    "regen",
    "reserveDrawn",
    "sanctions",
    "violations",
    "tools",
}


def _keys(obj) -> set[str]:
    if isinstance(obj, dict):
        return set(obj) | set().union(*(_keys(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys(v) for v in obj)) if obj else set()
    return set()


def _events(client, aid, headers):
    """The init event alone: its history holds every tick so far."""
    return read_stream(client, f"/api/arenas/{aid}/stream", headers, max_events=1)


def test_player_and_public_learn_nothing_hidden(tmp_path):
    cfg = payload(max_turns=6)
    cfg["observability"] = {
        "commonsStock": {"visible": False},
        "regenRate": {"visible": False},
        "othersWealth": {"visible": False},
        "othersHarvest": {"visible": False},
    }
    script = [
        {
            "harvest": 1.0,
            "actions": [
                {"tool": "send_private", "target": "b0", "text": SECRET},
                {"tool": "broadcast", "text": "hello all"},
            ],
        }
    ]
    with TestClient(create_app(tmp_path)) as client:
        c = client.post("/api/arenas", json=cfg).json()
        aid, (owner, akey, spec) = c["arenaId"], keys_of(c)
        assert (
            client.post(
                f"/api/arenas/{aid}/join", headers=akey, json={"agentType": "scripted", "name": "x", "script": script}
            ).status_code
            == 200
        )
        client.post(f"/api/arenas/{aid}/start", headers=owner)
        ticks = [client.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"] for _ in range(3)]
        stocks = {t["stock"] for t in ticks}
        wealth = {d["wealth"] for t in ticks for d in t["decisions"]}
        seen: dict[str, str] = {}
        for role, h in (("player", akey), ("public", {})):
            for path in (
                "/api/arenas",
                f"/api/arenas/{aid}",
                f"/api/arenas/{aid}/owner",
                f"/api/arenas/{aid}/summary",
                f"/api/arenas/{aid}/perturbations",
                "/api/arenas/history",
                f"/api/arenas/history/{aid}/summary",
            ):
                r = client.get(path, headers=h)
                if path.endswith(("/owner", "/summary", "/perturbations")):
                    assert r.status_code in (403, 404), (role, path, r.status_code)
                seen[f"{role} GET {path}"] = r.text
            for path in ("tick", "close", "start", "perturb"):
                r = client.post(f"/api/arenas/{aid}/{path}", headers=h, json={"type": "commons_shock", "payload": {}})
                assert r.status_code == 403, (role, path)
        player_stream = _events(client, aid, akey)
        seen["player stream"] = json.dumps(player_stream)
        assert client.get(f"/api/arenas/{aid}/stream").status_code == 403  # the public has no live stream
        assert [t["turn"] for t in player_stream[0][1]["history"]] == [1, 2, 3]
        assert any(m["text"] == "hello all" for t in player_stream[0][1]["history"] for m in t["messages"])
        for where, text in seen.items():
            body = json.loads(text)
            assert not (_keys(body) & HIDDEN_KEYS), (where, _keys(body) & HIDDEN_KEYS)
            assert SECRET not in text, where
            for v in stocks | wealth:
                assert json.dumps(v) not in text or v in (1.0, 30.0), (where, v)
        # the spectator sees the true state; the owner the private message too
        full = _events(client, aid, spec)[0][1]
        assert [t["stock"] for t in full["history"]] == [t["stock"] for t in ticks]
        assert SECRET in json.dumps(client.get(f"/api/arenas/{aid}/owner", headers=owner).json())
        # once closed, the report is public (as the seed's /history/:id/summary is)
        client.post(f"/api/arenas/{aid}/close", headers=owner)
        assert client.get(f"/api/arenas/history/{aid}/summary").json()["turnsPlayed"] == 3
