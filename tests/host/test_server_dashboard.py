"""The dashboard's routes (issue 26): the perturbation registry for the owner's form, manual /
auto switching while running, the tables owner and spectator share, and the turns of an
interrupted arena."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.config import perturbations as specs
from bdpd_jax.host.server import create_app


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with TestClient(create_app(tmp_path_factory.mktemp("arenas"))) as c:
        yield c


def test_perturbation_types_follow_the_registry(client):
    got = client.get("/api/perturbation-types").json()["types"]
    assert [t["type"] for t in got] == list(specs.ARENA_SPECS)
    for t in got:  # every example fits its payload schema's fields
        assert set(t["example"]) <= set(t["payloadSchema"]["properties"]), t["type"]

    def supported(engine: str) -> dict[str, bool]:
        got = client.get(f"/api/perturbation-types?engine={engine}").json()["types"]
        return {t["type"]: t["supported"] for t in got}

    seneca, logistic = supported("seneca"), supported("logistic")
    assert logistic["commons_shock"] and not all(seneca.values())
    assert client.get("/api/perturbation-types?engine=nope").status_code == 400
    specs.ARENA_SPECS.register("late_type", specs.ARENA_SPECS["commons_shock"])
    try:  # registered after the server started: the route reads the registry when called
        assert "late_type" in [t["type"] for t in client.get("/api/perturbation-types").json()["types"]]
    finally:
        specs.ARENA_SPECS.unregister("late_type")


def test_mode_switch_while_running(client):
    made = client.post("/api/arenas", json=payload(max_turns=40)).json()
    aid, (owner, player, spec) = made["arenaId"], keys_of(made)
    assert client.post(f"/api/arenas/{aid}/mode", headers=owner, json={"tickMode": "auto"}).status_code == 409
    client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "manual"})
    for who in (player, spec, {}):
        assert client.post(f"/api/arenas/{aid}/mode", headers=who, json={"tickMode": "auto"}).status_code == 403
    bad = client.post(f"/api/arenas/{aid}/mode", headers=owner, json={"tickMode": "auto", "tickIntervalMs": -1})
    assert bad.status_code == 422 and "tickIntervalMs" in bad.json()["detail"]
    r = client.post(f"/api/arenas/{aid}/mode", headers=owner, json={"tickMode": "auto", "tickIntervalMs": 5})
    assert r.json() == {"tickMode": "auto", "tickIntervalMs": 5.0}
    deadline = time.monotonic() + 120
    while client.get(f"/api/arenas/{aid}").json()["turn"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.get(f"/api/arenas/{aid}/dashboard", headers=spec).json()["tickMode"] == "auto"
    r = client.post(f"/api/arenas/{aid}/mode", headers=owner, json={"tickMode": "manual"})
    assert r.json() == {"tickMode": "manual", "tickIntervalMs": None}
    turn = client.get(f"/api/arenas/{aid}").json()["turn"]
    time.sleep(0.3)
    assert client.get(f"/api/arenas/{aid}").json()["turn"] == turn  # no auto tick after the switch
    assert client.post(f"/api/arenas/{aid}/tick", headers=owner).json()["turn"] == turn + 1
    client.post(f"/api/arenas/{aid}/close", headers=owner)
    assert client.post(f"/api/arenas/{aid}/mode", headers=owner, json={"tickMode": "auto"}).status_code == 409


def test_owner_and_spectator_share_the_tables(client):
    made = client.post("/api/arenas", json=payload(max_turns=6, players=3)).json()
    aid, (owner, player, spec) = made["arenaId"], keys_of(made)
    client.post(f"/api/arenas/{aid}/start", headers=owner)
    for _ in range(2):
        client.post(f"/api/arenas/{aid}/tick", headers=owner)
    fired = client.post(
        f"/api/arenas/{aid}/perturb", headers=owner, json={"type": "commons_shock", "payload": {"amount": -5}}
    ).json()
    views = [client.get(f"/api/arenas/{aid}/dashboard", headers=h) for h in (owner, spec, player, {})]
    assert [v.status_code for v in views] == [200, 200, 403, 403]
    own, spc = views[0].json(), views[1].json()
    assert own == spc
    assert own["players"] == [
        {"playerId": f"b{k}", "agentType": "builtin", "kindLabel": "built-in", "strategy": s}
        for k, s in enumerate(["conservative", "aggressive", "adaptive"])
    ]
    # a firing after the last tick is listed at once (it is in no record yet), then once
    assert own["perturbations"] == [{**fired, "owner": True}] and fired["turn"] == 3
    client.post(f"/api/arenas/{aid}/tick", headers=owner)
    again = client.get(f"/api/arenas/{aid}/dashboard", headers=spec).json()["perturbations"]
    assert again == [{**fired, "owner": True}]
    assert client.get(f"/api/arenas/{aid}/perturbations", headers=owner).json()["log"] == again
    text = views[1].text
    assert made["ownerKey"] not in text and made["arenaKey"] not in text and "meta" not in own


def test_interrupted_arena_reports_its_turns(tmp_path):
    first = TestClient(create_app(tmp_path))  # the server that dies without closing anything
    made = first.post("/api/arenas", json=payload(max_turns=6)).json()
    aid, owner = made["arenaId"], keys_of(made)[0]
    first.post(f"/api/arenas/{aid}/start", headers=owner)
    for _ in range(3):
        first.post(f"/api/arenas/{aid}/tick", headers=owner)
    with TestClient(create_app(tmp_path)) as client:
        view = client.get(f"/api/arenas/{aid}").json()
        assert view["status"] == "interrupted" and view["turn"] == 3
        hist = {h["arenaId"]: h for h in client.get("/api/arenas/history").json()["arenas"]}
        assert hist[aid]["turnsPlayed"] == 3 and hist[aid]["engineMode"] == "logistic"
        assert client.get("/api/arenas", headers=owner).json()["arenas"][0]["turn"] == 3
        assert client.get(f"/api/arenas/{aid}/owner", headers=owner).json()["turn"] == 3
        assert client.get(f"/api/arenas/{aid}/dashboard", headers=keys_of(made)[2]).json()["tickMode"] == "manual"


def test_favicon(client):
    for path in ("/favicon.ico", "/favicon.svg"):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml") and b"<svg" in r.content
