"""Configs already seen are not validated or built again (bdpd_jax/prepare/prepared.py,
sweep.cached_plan); a change of content is seen as a new config."""

from __future__ import annotations

import copy

import pandas as pd
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.prepare import prepared
from bdpd_jax.sweeps import sweep


def _cfg() -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["model"]["maxTurns"] = 5
    return cfg


def test_simulate_builds_a_config_once_per_content(monkeypatch):
    built = []
    real = prepared.build
    monkeypatch.setattr(prepared, "build", lambda cfg, **kw: built.append(1) or real(cfg, **kw))
    cfg = _cfg()
    cfg["model"]["regenRate"] = 0.1234  # content no other test uses
    a = bdpd_jax.simulate(cfg, n_arenas=2, seed=1, history=False)
    b = bdpd_jax.simulate(copy.deepcopy(cfg), n_arenas=2, seed=1, history=False)
    assert len(built) == 1
    pd.testing.assert_frame_equal(a.summary, b.summary, check_exact=True)
    cfg["model"]["regenRate"] = 0.2345  # the same dict, mutated: new content, built again
    c = bdpd_jax.simulate(cfg, n_arenas=2, seed=1, history=False)
    assert len(built) == 2 and c.meta["config"]["model"]["regenRate"] == 0.2345
    # an ArenaConfig changed after a run does not change what the cache holds for its old content
    obj = ArenaConfig.model_validate(_cfg())
    first = bdpd_jax.simulate(obj, n_arenas=2, seed=1, history=False)
    obj.model.threshold = 1000.0  # every arena collapses at once
    assert (bdpd_jax.simulate(obj, n_arenas=2, seed=1, history=False).summary.turns_played == 1).all()
    again = bdpd_jax.simulate(ArenaConfig.model_validate(_cfg()), n_arenas=2, seed=1, history=False)
    pd.testing.assert_frame_equal(first.summary, again.summary, check_exact=True)


def test_sweep_plans_a_table_once():
    cfg = _cfg()
    table = pd.DataFrame({"model.regenRate": [0.11, 0.13]})
    a = sweep.run_points(cfg, table, replicates=2, progress=False)
    n = len(sweep._PLANS)
    b = sweep.run_points(copy.deepcopy(cfg), table.copy(), replicates=2, progress=False)
    assert len(sweep._PLANS) == n
    pd.testing.assert_frame_equal(a.arenas, b.arenas, check_exact=True)
    sweep.run_points(cfg, pd.DataFrame({"model.regenRate": [0.11, 0.14]}), replicates=2, progress=False)
    assert len(sweep._PLANS) == min(n + 1, sweep.MAX_PLANS)
