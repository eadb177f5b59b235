"""The victory evaluation (bdpd_jax/results/victory.py): a plain-Python reference of the rule, and the
same report from a live arena's summary.json and from a batch's ``Results.report()``."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.results.victory import evaluate


def _reference(survived, played, max_turns, gain, viol):
    n = len(gain)
    outcome = "collapsed" if not survived else ("sustained" if played >= max_turns else "open")
    rank = [1 + sum(gain[j] > gain[i] for j in range(n)) for i in range(n)]
    compliant = [v == 0 for v in viol]
    pool = [gain[i] for i in range(n) if compliant[i]] if survived else []
    winners = [i for i in range(n) if pool and compliant[i] and gain[i] == max(pool)]
    return outcome, rank, compliant, winners


@given(
    st.lists(st.tuples(st.sampled_from([-1.0, 0.0, 0.5, 2.0, 3.5]), st.integers(0, 2)), min_size=1, max_size=6),
    st.booleans(),
    st.integers(1, 10),
)
def test_rule_matches_reference(players, survived, played):
    gain = [g for g, _ in players]
    viol = [v for _, v in players]
    ev = evaluate(np.array([survived]), np.array([played]), 8, np.array(gain)[:, None], np.array(viol)[:, None])
    outcome, rank, compliant, winners = _reference(survived, played, 8, gain, viol)
    assert ev["outcome"][0] == outcome
    assert ev["rank"][:, 0].tolist() == rank
    assert ev["compliant"][:, 0].tolist() == compliant
    assert np.flatnonzero(ev["winner"][:, 0]).tolist() == winners


def test_live_summary_and_batch_report_agree():
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["model"]["maxTurns"] = 12
    res = bdpd_jax.simulate(cfg, n_arenas=3, seed=5)
    rep = res.report()
    assert list(rep["arena"]) == [0, 1, 2]
    for k in range(3):
        a = Arena(cfg, seed=5, arena_index=k)
        v = a.run()["victory"]
        row = rep.iloc[k]
        assert v["outcome"] == row["outcome"] and v["turnsPlayed"] == row["turns_played"]
        by_player = {r["playerId"]: r for r in v["rankings"]}
        for i, p in enumerate(a.players):
            assert by_player[p]["rank"] == row[f"gain_rank_{i}"]
            assert np.isclose(by_player[p]["gain"], row[f"gain_{i}"], rtol=1e-6)
            assert by_player[p]["compliant"] == row[f"compliant_{i}"]
        assert v["winners"] == [a.players[int(i)] for i in row["winners"].split(",") if i]
