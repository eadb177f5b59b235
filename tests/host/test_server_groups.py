"""The server ticks auto arenas that share a compiled game in groups (one batched kernel call
per phase per tick, ``server/ticker.py``): every arena's records are those it plays ticked
alone, bit for bit, through joins, an owner perturbation, a manual tick and a close mid-run."""

from __future__ import annotations

import time

import httpx
from server_helpers import keys_of, payload, serve

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.persist import read_jsonl
from bdpd_jax.host.live.replay import turn_records
from bdpd_jax.host.server import models as M
from bdpd_jax.host.server import ticker as ticker_mod
from bdpd_jax.host.server.live import Workers
from bdpd_jax.host.server.ticker import Ticker

TURNS = 30
DROP = ("arenaId",)  # the reference arena has its own id


def _alone(body: dict, seed: int, fire: dict | None = None, fire_turn: int | None = None) -> list[dict]:
    """The same arena ticked alone (no server), firing ``fire`` before turn ``fire_turn``."""
    m = M.CreateArena.model_validate(body)
    a = Arena(m.config(), seed=seed, pact_slots=m.pact_slots, turns=m.turns, perturbable=m.perturbable, fsync=False)
    a.start()
    while not a.done:
        if fire is not None and a.turn + 1 == fire_turn:
            a.perturb(fire)
        a.tick()
    return [{k: v for k, v in r.items() if k not in DROP} for r in a.records]


def _served(root, aid) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in DROP} for r in turn_records(read_jsonl(root / aid / "turns.jsonl"))]


def test_grouped_arenas_play_as_alone(tmp_path, monkeypatch):
    sizes: list[int] = []

    class Counting(Arena):
        @staticmethod
        def regroup(arenas, width=None):
            sizes.append(len(arenas))
            return Arena.regroup(arenas, width)

    monkeypatch.setattr(ticker_mod, "Arena", Counting)
    # 6 arenas, 2 compiled games (2 and 3 players); different seeds and stocks (numbers, not shapes)
    bodies = [
        payload(max_turns=TURNS, players=2 + k % 2, commonsCapacity=1e6, commonsInitial=5e5 + 1e4 * k)
        | {"seed": 10 + k}
        for k in range(6)
    ]
    fire = {"type": "commons_shock", "payload": {"amount": -3.0}}
    with serve(tmp_path) as base, httpx.Client(base_url=base, timeout=120, trust_env=False) as client:
        made = []
        for body in bodies:
            c = client.post("/api/arenas", json=body).json()
            made.append((c["arenaId"], keys_of(c)[0]))
        for aid, owner in made:  # each starts auto-ticking; those of a game join its group's next tick
            r = client.post(f"/api/arenas/{aid}/start", headers=owner, json={"tickMode": "auto", "tickIntervalMs": 20})
            assert r.status_code == 200, r.text
        turn = lambda aid: client.get(f"/api/arenas/{aid}").json()["turn"]  # noqa: E731
        while turn(made[0][0]) < 3:
            time.sleep(0.02)
        assert client.post(f"/api/arenas/{made[0][0]}/perturb", headers=made[0][1], json=fire).status_code == 200
        r = client.post(f"/api/arenas/{made[2][0]}/tick", headers=made[2][1])  # same game as made[0]
        assert r.status_code == 200, r.text
        manual = r.json()["tick"]
        closed = client.post(f"/api/arenas/{made[5][0]}/close", headers=made[5][1]).json()
        deadline = time.monotonic() + 90
        while any(a["arenaId"] in dict(made[:5]) for a in client.get("/api/arenas").json()["arenas"]):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert max(sizes) >= 2  # arenas were ticked together
    fired = [r for r in _served(tmp_path, made[0][0]) if r.get("ownerPerturbations")]
    assert len(fired) == 1
    spec, at = fired[0]["ownerPerturbations"][0]["spec"], fired[0]["turn"]
    for k, (aid, _) in enumerate(made):
        got = _served(tmp_path, aid)
        want = _alone(bodies[k], bodies[k]["seed"], spec if k == 0 else None, at if k == 0 else None)
        if k == 5:  # closed mid-run: a prefix of its game
            assert len(got) == closed["turnsPlayed"] and got == want[: len(got)]
        else:
            assert got == want, k
    assert manual is not None and manual["turn"] <= TURNS


def test_arenas_with_external_players_tick_alone():
    t = Ticker(Workers(cpu=1), lambda lv, s: None)
    a = Arena({k: v for k, v in payload(players=2).items() if k != "seed"}, seed=1)
    a.join({"agentType": "http", "name": "h", "url": "http://127.0.0.1:9/x"})
    assert t.key(a, 0.02) == ("solo", a.arena_id)
    off = Ticker(Workers(cpu=1), lambda lv, s: None, grouping=False)
    b = Arena({k: v for k, v in payload(players=2).items() if k != "seed"}, seed=1)
    assert off.key(b, 0.02) == ("solo", b.arena_id)


def test_ungrouped_server_ticks_each_arena_alone(tmp_path):
    """``group_ticks=False``: every auto arena is a group of one (the path of arenas with
    external players), ticked by its own Arena; records as alone."""
    bodies = [
        payload(max_turns=8, players=2, commonsCapacity=1e6, commonsInitial=5e5) | {"seed": 20 + k} for k in range(2)
    ]
    with (
        serve(tmp_path, group_ticks=False) as base,
        httpx.Client(base_url=base, timeout=120, trust_env=False) as client,
    ):
        made = [client.post("/api/arenas", json=b).json() for b in bodies]
        for c in made:
            r = client.post(
                f"/api/arenas/{c['arenaId']}/start",
                headers=keys_of(c)[0],
                json={"tickMode": "auto", "tickIntervalMs": 0},
            )
            assert r.status_code == 200, r.text
        deadline = time.monotonic() + 60
        while client.get("/api/arenas").json()["arenas"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    for c, body in zip(made, bodies, strict=True):
        assert _served(tmp_path, c["arenaId"]) == _alone(body, body["seed"])
