"""``bdpd_jax.fork``: a live arena's state at a turn continued as a batch (issue 41's forks).

The identity property: with no changes and the live arena's own seed, the fork's arena 0 is
the live arena's continuation, bit for bit (built-in players). Stand-ins for remote players,
config changes from the fork's turn, and bad input named before anything runs."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.replay import replay
from bdpd_jax.prepare import prepare
from bdpd_jax.run import fork as fork_mod
from bdpd_jax.run.fork import fan

TURNS = 8


def _config(players):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"]["maxTurns"] = TURNS
    return {**cfg, "players": players}


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A live arena of built-ins (seed 5, arena index 2) played to its end, with its folder."""
    d = tmp_path_factory.mktemp("live")
    a = Arena(_config(MIXED_PLAYERS), seed=5, arena_index=2, out_dir=d, fsync=False)
    a.start()
    recs = [a.tick() for _ in range(TURNS)]
    return d, [r for r in recs if r is not None]


def test_replicate_zero_is_the_live_continuation_bit_for_bit(played):
    folder, recs = played
    res = bdpd_jax.fork(folder, turn=3, replicates=2)
    turns, players = res.turns, res.players
    r0 = turns[turns.arena == 0].set_index("turn")
    assert list(r0.index) == [r["turn"] for r in recs[3:]]
    for rec in recs[3:]:
        assert r0.loc[rec["turn"], "stock"] == np.float32(rec["stock"]), rec["turn"]
        p = players[(players.arena == 0) & (players.turn == rec["turn"])].sort_values("player")
        for col in ("requested", "actual", "wealth"):
            assert list(p[col]) == [np.float32(d[col]) for d in rec["decisions"]], (rec["turn"], col)
    # replicate 1 draws its own numbers (the observation noise of the conservative player)
    req = players[players.turn == 4].pivot(index="player", columns="arena", values="requested")
    assert not np.array_equal(req[0], req[1])
    f = fan(res)
    assert list(f.turn) == list(range(4, TURNS + 1)) and (f.n == 2).all()
    assert (f.q05 <= f["median"]).all() and (f["median"] <= f.q95).all()


def test_the_arena_and_a_fork_that_changes_nothing_share_one_prepared_run(played, monkeypatch):
    """The live arena holds one PreparedRun (its run's game and params, its meta's config); a
    fork that changes nothing of it plays on it, one with a change prepares its own."""
    folder, _ = played
    a = replay(folder, turns=3, verify=False)
    prep = a.prepared
    assert a.game is prep.game and a.params is prep.params and a.kernel_config() is prep.config
    assert a.meta()["config"] == prep.meta()["config"] and a.meta()["maxTurns"] == TURNS
    calls = []
    monkeypatch.setattr(fork_mod, "prepare", lambda *x, **k: calls.append(1) or prepare(*x, **k))
    bdpd_jax.fork(a, replicates=2)
    assert calls == []
    bdpd_jax.fork(a, replicates=2, changes={"model.regenRate": 0.3})
    assert len(calls) == 1


def test_standins_changes_and_a_new_pact(tmp_path):
    a = Arena(_config(MIXED_PLAYERS[:3]), seed=1, out_dir=tmp_path, fsync=False)
    a.join(
        {"agentType": "scripted", "name": "ext", "privateResource": 30, "script": [{"harvest": 2.0}, {"harvest": 4.5}]}
    )
    a.start()
    a.tick(), a.tick()
    pact = {"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 1}}
    res = bdpd_jax.fork(a, replicates=2, turns=2, changes={"players[0].strategy": "idle", "pacts": [pact]})
    p = res.players
    ext = p[p.player == 3]
    assert set(ext.strategy) == {"repeat_last"} and (ext.requested == np.float32(4.5)).all()  # its last request
    assert (p[p.player == 0].requested == 0).all()  # the change is in force from the fork's turn
    v = res.extra["violations"]
    assert set(v.turn) == {3, 4} and set(v.term_type) == {"harvest_cap"} and 0 not in set(v.player)


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"turn": 99}, "turn: must be an integer in [0, 8]"),
        ({"replicates": 0}, "replicates"),
        ({"seed": -1}, "seed"),
        ({"changes": {"model.nope": 1}}, "changes: model.nope"),
        ({"changes": {"model.regenRate": -5}}, "changes:"),
        ({"standin": {"nobody": "idle"}}, "standin"),
        ({"turns": 0}, "turns"),
        ({"turn": None}, "turns: the fork plays at least 1 turn after turn 8"),
    ],
)
def test_bad_input_is_named_before_anything_runs(played, kw, needle):
    with pytest.raises(ValueError) as e:
        bdpd_jax.fork(played[0], **{"turn": 3, **kw})
    assert needle in str(e.value), str(e.value)
