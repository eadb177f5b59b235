"""GovSim's newcomer experiment as GovSim's code runs it (issue 37 item 5): the outsider
inserted after month 3, the threshold over the configured agents, the metrics as its analysis
reads a log; against tests/reference_govsim.py, batched."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import reference_govsim as ref
from hypothesis import given, settings
from hypothesis import strategies as st
from test_govsim import REQUEST, SEED, N, batched_run, check_metrics, kernel_pick

import bdpd_jax as bj
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels import rng
from bdpd_jax.kernels.rollout import batched
from bdpd_jax.kernels.turn import step
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.run.simulate import arena_keys
from bdpd_jax.scenarios import govsim

NEW_T, JOIN = 15, 3  # GovSim's newcomer: 15 months, the outsider inserted once 3 are done
NEW_SEQUENCES = st.lists(st.lists(REQUEST, min_size=N, max_size=N), min_size=NEW_T, max_size=NEW_T)


@pytest.fixture(scope="module")
def newcomer_kernel():
    """The batched step of GovSim's newcomer arena (B = 1): 4 players from month 1, a 5th
    with activeFrom 4."""
    game, params = build(ArenaConfig.load(govsim("fishery", "newcomer", players=["idle"] * N)))
    pb = broadcast_batch(params, 1)
    keys = arena_keys(SEED, np.arange(1))
    return game, pb, keys, jax.jit(batched(game.init)), jax.jit(batched(lambda k, s, a, p: step(game, k, s, a, p)))


@settings(max_examples=15)
@given(NEW_SEQUENCES)
def test_newcomer_sequences_match_govsims_code(newcomer_kernel, seq):
    """Whatever the requests, the newcomer arena plays as GovSim's environment code (the
    outsider inserted after month 3, its requests before unread; thresholds: month 1's literal
    10, then (pool // 2) // 4) and its metrics read as GovSim's analysis (survival 12 when
    it never collapses, a collapse from month 12 on survives, means over the agents logged)."""
    key = arena_keys(SEED, np.arange(1))[:, 0]
    trace = ref.run(seq, pick=kernel_pick(key), agents=N - 1, join_after=JOIN)
    catches, got = batched_run(newcomer_kernel, seq)
    assert catches == [[float(x) for x in c] for c in trace["catches"]]
    check_metrics(got, ref.metrics(trace, NEW_T, N, 50.0, horizon=12))


def test_newcomer_cases_of_the_issue(newcomer_kernel):
    """GovSim's code on chosen runs: everyone at 12 (the threshold with 4) never collapses
    within 12 months but the pool shrinks once 5 take it; an early collapse (month 2) has the
    newcomer absent from the log (gain over 4); a collapse in month 13 survives (survival 13)."""
    key = arena_keys(SEED, np.arange(1))[:, 0]
    early = [[10] * 4 + [50]] + [[30] * 4 + [50]] * (NEW_T - 1)
    _, got = batched_run(newcomer_kernel, early)
    trace = ref.run(early, pick=kernel_pick(key), agents=N - 1, join_after=JOIN)
    assert trace["collapsed"] and len(trace["catches"]) == 2 and trace["present"] == [4, 4]
    assert got["govsim_gain"] == pytest.approx(got["govsim_total_gain"] / 4)
    assert (got["govsim_survival_time"], got["govsim_survived"]) == (2, False)
    late = [[10] * N] * 12 + [[100] * N] * 3  # the whole pool asked for in month 13
    catches, got = batched_run(newcomer_kernel, late)
    assert len(catches) == 13 and catches[0][-1] == 0 and catches[3][-1] == 10
    assert (got["govsim_survival_time"], got["govsim_survived"]) == (13, True)
    check_metrics(got, ref.metrics(ref.run(late, pick=kernel_pick(key), agents=4, join_after=3), NEW_T, N, 50.0, 12))


def test_newcomer_inactive_for_three_months_and_the_readings_are_params():
    """The scenario's newcomer (threshold_taker, activeFrom 4) requests and receives nothing in
    months 1-3 and fishes from month 4; thresholdPlayers, metricPlayers and survivalHorizon are
    params leaves: the paper's readings run on the same compiled program and change what
    they say they change."""
    from bdpd_jax.lab import TRACES

    cfg = govsim("fishery", "newcomer")
    res = bj.simulate(cfg, n_arenas=2, seed=3)
    p = res.players[res.players.arena == 0].pivot(index="turn", columns="player", values="actual")
    assert (p.loc[1:3, 4] == 0).all() and (p.loc[4:, 4] > 0).all()
    assert p.loc[1, 0] == 10 and p.loc[2, 0] == 12  # month 1's literal 10, then (100 // 2) // 4
    traces = TRACES["run"]
    paper = govsim("fishery", "newcomer")
    paper["model"].update(thresholdPlayers="present", metricPlayers="all")
    del paper["model"]["survivalHorizon"]
    res2 = bj.simulate(paper, n_arenas=2, seed=3)
    assert TRACES["run"] == traces
    p2 = res2.players[res2.players.arena == 0].pivot(index="turn", columns="player", values="actual")
    assert p2.loc[1, 0] == 12 and p2.loc[4, 0] == 10  # (100 // 2) // 4, then // 5 once the newcomer acts
    s2 = res2.summary.iloc[0]
    assert s2.govsim_gain == pytest.approx(s2.govsim_total_gain / 5)
    assert s2.govsim_survival_time == (15 if s2.govsim_survived else s2.govsim_survival_time)
    later = govsim("fishery", "newcomer")
    later["players"][-1]["activeFrom"] = 6  # activeFrom too is a params leaf
    p3 = bj.simulate(later, n_arenas=2, seed=3).players
    p3 = p3[p3.arena == 0].pivot(index="turn", columns="player", values="actual")
    assert TRACES["run"] == traces and (p3.loc[1:5, 4] == 0).all() and p3.loc[6, 4] > 0
    with pytest.raises(ValueError, match="thresholdPlayers"):
        ArenaConfig.load({**cfg, "model": {**cfg["model"], "thresholdPlayers": "some"}})


def test_newcomer_live_is_asked_from_month_four():
    """A live arena's late joiner (scripted, activeFrom 4) is not asked before month 4 (no
    harvest in its decisions), then plays as GovSim's code would; the live report's GovSim
    columns read the run as the reference's analysis does."""
    from bdpd_jax.host.live.arena import Arena

    seq = [[10, 10, 10, 10, 30]] * 6 + [[14, 13, 12, 11, 30]] * (NEW_T - 6)
    arena = Arena(govsim("fishery", "newcomer", players=[]), seed=SEED)
    for k in range(N):
        script = [{"harvest": seq[t][k]} for t in range(NEW_T)]
        arena.join({"agentType": "scripted", "name": f"x{k}", "activeFrom": 4 if k == N - 1 else 1, "script": script})
    arena.run()
    key = rng.arena_key(SEED, 0)
    trace = ref.run(seq, pick=kernel_pick(key), agents=N - 1, join_after=JOIN)
    assert [[d["actual"] for d in r["decisions"]] for r in arena.records] == [
        [float(x) for x in c] for c in trace["catches"]
    ]
    asked = [("harvest" in r["decisions"][-1]) for r in arena.records]
    assert asked[:JOIN] == [False] * JOIN and all(asked[JOIN:])
    check_metrics(arena.summary()["govsim"], ref.metrics(trace, NEW_T, N, 50.0, horizon=12))
