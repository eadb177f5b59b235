"""Configs already seen are not validated or built again (bdpd_jax/prepare/prepared.py,
sweep.cached_plan); a change of content is seen as a new config."""

from __future__ import annotations

import copy
import pickle

import pandas as pd
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.prepare import prepared
from bdpd_jax.run.options import RunOptions
from bdpd_jax.sweeps import plan, sweep


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
    obj.model.engine.threshold = 1000.0  # every arena collapses at once
    assert (bdpd_jax.simulate(obj, n_arenas=2, seed=1, history=False).summary.turns_played == 1).all()
    again = bdpd_jax.simulate(ArenaConfig.model_validate(_cfg()), n_arenas=2, seed=1, history=False)
    pd.testing.assert_frame_equal(first.summary, again.summary, check_exact=True)


def test_sweep_plans_a_table_once():
    cfg = _cfg()
    table = pd.DataFrame({"model.regenRate": [0.11, 0.13]})
    a = sweep.run_points(cfg, table, RunOptions(replicates=2, progress=False))
    n = len(plan._PLANS)
    b = sweep.run_points(copy.deepcopy(cfg), table.copy(), RunOptions(replicates=2, progress=False))
    assert len(plan._PLANS) == n
    pd.testing.assert_frame_equal(a.arenas, b.arenas, check_exact=True)
    sweep.run_points(cfg, pd.DataFrame({"model.regenRate": [0.11, 0.14]}), RunOptions(replicates=2, progress=False))
    assert len(plan._PLANS) == min(n + 1, plan.MAX_PLANS)


def test_table_key_sees_values_dtypes_and_names_not_the_index():
    t = pd.DataFrame({"model.regenRate": [0.11, 0.13], "players[0].intensity": [1, 2]})
    key = plan.table_key(t)
    assert plan.table_key(t.set_axis([7, 9])) == key  # a plan resets the index
    assert plan.table_key(t.astype({"players[0].intensity": float})) != key
    assert plan.table_key(t.assign(**{"model.regenRate": [0.11, 0.12]})) != key
    assert plan.table_key(t.rename(columns={"model.regenRate": "model.carryingCapacity"})) != key
    names = pd.DataFrame({"players[0].strategy": ["cooperator", "defector"]}, dtype=object)
    assert plan.table_key(names) != plan.table_key(names.iloc[::-1].reset_index(drop=True))


def test_sweep_arenas_frame_is_built_once_on_first_read():
    cfg = _cfg()
    table = pd.DataFrame({"model.regenRate": [0.11, 0.13]})
    res = sweep.run_points(cfg, table, RunOptions(replicates=3, progress=False))
    back = pickle.loads(pickle.dumps(res))  # before the frame was read: pickled as one
    pd.testing.assert_frame_equal(back.arenas, res.arenas, check_exact=True)
    plan = sweep.cached_plan(bdpd_jax.lab.prepare(cfg), table, RunOptions(replicates=3))
    assert res.arenas is res.arenas  # built once, then kept
    pd.testing.assert_frame_equal(res.arenas, plan.run_chunk(0), check_exact=True)
    pd.testing.assert_frame_equal(res.points, sweep.aggregate(res.arenas, res.names, plan.outcomes()), check_exact=True)
