"""``POST /api/arenas/{id}/fork`` (issue 41): owner or spectator, bounded with the numbers in
the 400, the fan in the answer, the frames behind its links (csv, json, parquet)."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest
from fastapi.testclient import TestClient
from server_helpers import keys_of, payload

from bdpd_jax.host.server import create_app, routes_fork


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """A served arena of 2 built-ins, 3 turns played of 6; forks run in a thread here (the
    server's worker process costs a process start and a jax import)."""
    routes_fork.use_executor(ThreadPoolExecutor(1))
    app = create_app(tmp_path_factory.mktemp("arenas"))
    with TestClient(app) as c:
        created = c.post("/api/arenas", json=payload(max_turns=6)).json()
        owner, player, spectator = keys_of(created)
        aid = created["arenaId"]
        assert c.post(f"/api/arenas/{aid}/start", headers=owner).status_code == 200
        for _ in range(3):
            assert c.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 200
        yield c, aid, owner, player, spectator
    routes_fork.use_executor(None)


def test_a_spectator_forks_and_downloads_the_frames(arena):
    c, aid, _, _, spectator = arena
    r = c.post(
        f"/api/arenas/{aid}/fork", headers=spectator, json={"replicates": 3, "changes": {"model.regenRate": 0.3}}
    )
    assert r.status_code == 200, r.text
    ans = r.json()
    assert (ans["turn"], ans["replicates"], ans["turns"]) == (3, 3, 3)
    assert [row["turn"] for row in ans["fan"]] == [4, 5, 6] and all(row["n"] == 3 for row in ans["fan"])
    turns = pd.read_csv(io.StringIO(c.get(ans["links"]["turns"], headers=spectator).text))
    assert list(turns.columns[:3]) == ["arena", "turn", "stock"] and len(turns) == 9
    fan = turns.groupby("turn").stock.median()
    assert [round(x, 3) for x in fan] == [round(row["median"], 3) for row in ans["fan"]]
    players = c.get(ans["links"]["players"].replace(".csv", ".json"), headers=spectator).json()
    assert len(players) == 3 * 3 * 2 and {"arena", "turn", "player", "wealth"} <= set(players[0])
    pq = c.get(ans["links"]["summary"].replace(".csv", ".parquet"), headers=spectator)
    assert len(pd.read_parquet(io.BytesIO(pq.content))) == 3
    listed = c.get(f"/api/arenas/{aid}/forks", headers=spectator).json()["forks"]
    assert ans["forkId"] in [f["forkId"] for f in listed]


@pytest.mark.parametrize(
    "who, body, status, needle",
    [
        ("player", {"replicates": 2}, 403, "token"),
        ("owner", {"replicates": 10_000, "turns": 1000}, 400, "10000 replicates x 1000 turns x 2 players"),
        ("owner", {"replicates": 10_001}, 422, "replicates"),
        ("owner", {"turn": 9}, 400, "turn: must be in [0, 3]"),
        ("owner", {"replicates": 2, "changes": {"model.nope": 1}}, 400, "changes: model.nope"),
        ("owner", {"replicates": 2, "bogus": 1}, 422, "bogus"),
    ],
)
def test_refused_forks_name_the_field(arena, who, body, status, needle):
    c, aid, owner, player, _ = arena
    r = c.post(f"/api/arenas/{aid}/fork", headers={"owner": owner, "player": player}[who], json=body)
    assert r.status_code == status, r.text
    assert needle in r.json()["detail"], r.json()["detail"]
    assert c.get(f"/api/arenas/{aid}/forks/0123456789ab/turns.csv", headers=owner).status_code == 404
