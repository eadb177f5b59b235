"""The 004_* A.2 HTTP API over live arenas, served by uvicorn on loopback (SSE included)."""

from __future__ import annotations

import copy
import json
import socket
import threading
import time

import httpx
import pytest
from payloads import SEED_LOGISTIC
from server_helpers import parse_sse

from bdpd_jax.host.server import create_app


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    import uvicorn

    root = tmp_path_factory.mktemp("arenas")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(create_app(root), log_level="warning", lifespan="off", timeout_graceful_shutdown=0.3)
    )
    th = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    th.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with httpx.Client(base_url=base, timeout=30, trust_env=False) as client:
        yield client, root
    server.should_exit = True
    th.join(timeout=5)
    sock.close()


def _payload(max_turns=4):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"]["maxTurns"] = max_turns
    cfg["players"] = [{"strategy": "conservative", "name": "cons"}, {"strategy": "aggressive", "name": "aggr"}]
    return {**cfg, "seed": 3}


def test_lifecycle_join_tick_stream_close(api, live_server):
    client, root = api
    assert client.get("/api/health").json()["ok"] is True
    created = client.post("/api/arenas", json=_payload()).json()
    aid, owner = created["arenaId"], {"X-Owner-Key": created["ownerKey"]}
    akey = {"X-Arena-Key": created["arenaKey"]}
    # join: arena key required, bad code rejected with the parser's message
    assert client.post(f"/api/arenas/{aid}/join", json={"agentType": "builtin"}).status_code == 403
    bad = client.post(
        f"/api/arenas/{aid}/join", headers=akey, json={"agentType": "code", "strategyCode": "function decide( {"}
    )
    assert bad.status_code == 400 and "strategyCode" in bad.json()["detail"]
    r = client.post(
        f"/api/arenas/{aid}/join",
        headers=akey,
        json={
            "agentType": "code",
            "displayName": "js",
            "privateResource": 30,
            "strategyCode": "function decide(obs, memory) { memory.t = (memory.t || 0) + 1; return 0.5; }",
        },
    )
    assert r.json()["playerId"] == "js"
    r = client.post(
        f"/api/arenas/{aid}/join",
        headers=akey,
        json={"agentType": "http", "name": "web", "url": f"{live_server.base}/ok"},
    )
    assert r.json()["players"] == ["cons", "aggr", "js", "web"]
    assert client.post(f"/api/arenas/{aid}/start").status_code == 403
    assert client.post(f"/api/arenas/{aid}/start", headers=owner).json()["status"] == "running"

    # SSE: init (with history), then one tick per POST /tick, then arena_closed
    events: list[tuple[str, dict]] = []

    def listen():
        with client.stream("GET", f"/api/arenas/{aid}/stream", params={"token": created["spectatorToken"]}) as s:
            for ev in parse_sse(s.iter_lines()):
                events.append(ev)
                if ev[0] == "arena_closed":
                    return

    th = threading.Thread(target=listen, daemon=True)
    th.start()
    deadline = time.monotonic() + 10
    while not events and time.monotonic() < deadline:
        time.sleep(0.02)
    ticks = [client.post(f"/api/arenas/{aid}/tick", headers=owner).json()]
    fired = client.post(
        f"/api/arenas/{aid}/perturb",
        headers=owner,
        json={
            "spec": {"id": "cut", "type": "commons_shock", "trigger": {"kind": "manual"}, "payload": {"amount": -20.0}}
        },
    )
    assert fired.json()["target"] == "stock" and fired.json()["turn"] == 2
    assert client.post(f"/api/arenas/{aid}/perturb", headers=owner, json={"specId": "none"}).status_code == 400
    ticks.append(client.post(f"/api/arenas/{aid}/tick", headers=owner).json())
    assert ticks[1]["tick"]["ownerPerturbations"][0]["type"] == "commons_shock"
    log = client.get(f"/api/arenas/{aid}/perturbations", headers=owner).json()["log"]
    assert [e["type"] for e in log] == ["commons_shock"] and log[0]["owner"] is True
    assert [t["tick"]["turn"] for t in ticks] == [1, 2]
    web = ticks[0]["tick"]["decisions"][3]
    assert web["harvest"] == 1.25 and web["actions"][0] == {"tool": "broadcast", "text": "keep it low"}
    view = client.get(f"/api/arenas/{aid}").json()
    assert view["turn"] == 2 and view["status"] == "running" and "ownerKey" not in json.dumps(view)
    full = client.get(f"/api/arenas/{aid}/owner", headers=owner).json()
    assert full["messages"][0]["text"] == "keep it low" and full["lastTick"]["turn"] == 2
    summ = client.post(f"/api/arenas/{aid}/close", headers=owner).json()
    assert summ["status"] == "closed" and summ["turnsPlayed"] == 2
    th.join(timeout=10)
    kinds = [e for e, _ in events]
    assert kinds[0] == "init" and kinds.count("tick") == 2 and kinds[-1] == "arena_closed"
    assert "perturbation" in kinds
    # on disk
    assert (root / aid / "summary.json").is_file()
    hist = client.get("/api/arenas/history").json()["arenas"]
    assert aid in [h["arenaId"] for h in hist]
    assert client.get(f"/api/arenas/history/{aid}/summary").json()["turnsPlayed"] == 2
    assert client.delete(f"/api/arenas/{aid}", headers=owner).json() == {"deleted": aid}
    assert client.get(f"/api/arenas/{aid}").status_code == 404


def test_auto_tick_runs_to_the_end(api):
    client, _ = api
    created = client.post(
        "/api/arenas",
        json={
            **_payload(max_turns=3),
            "players": [
                {"strategy": "conservative"},
                {"strategy": "adaptive"},
                {"strategy": "random"},
                {"strategy": "aggressive"},
            ],
        },
    ).json()
    aid, owner = created["arenaId"], {"X-Owner-Key": created["ownerKey"]}
    client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "auto", "tickIntervalMs": 1})
    deadline = time.monotonic() + 30
    while client.get(f"/api/arenas/{aid}").json()["status"] != "closed" and time.monotonic() < deadline:
        time.sleep(0.05)
    view = client.get(f"/api/arenas/{aid}").json()
    assert view["status"] == "closed" and view["turn"] == 3
    assert client.get("/api/arenas", headers=owner).json()["arenas"][0]["arenaId"] == aid
    assert client.post("/api/arenas", json={"model": {"engineMode": "nope"}}).status_code == 400
