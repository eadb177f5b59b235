"""bdpd_jax.lab, the public middle tier: a rollout over several prepared runs of one Game is
one program and gives each run's arenas exactly what a rollout of that run alone gives;
``prepare`` is computed once per content and rejects what it cannot run."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax import lab


def _cfg(regen: float) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["model"]["maxTurns"] = 6
    cfg["model"]["regenRate"] = regen
    return cfg


def test_several_runs_in_one_program_equal_each_run_alone() -> None:
    runs = [bdpd_jax.lab.prepare(_cfg(r)) for r in (0.05, 0.3)]
    before = lab.TRACES["run"]
    both = lab.rollout(runs, 3, seed=7, history=True)
    assert lab.TRACES["run"] - before <= 1  # one program (none when already compiled)
    for k, run in enumerate(runs):
        alone = lab.rollout(run, 3, seed=7, arena_offset=3 * k, history=True)
        for a, b in (
            (both.state.wealth, alone.state.wealth),
            (both.state.turn, alone.state.turn),
            (both.records.stock, alone.records.stock),
        ):
            np.testing.assert_array_equal(np.asarray(a)[..., 3 * k : 3 * k + 3], np.asarray(b))


def test_rollout_matches_simulate() -> None:
    """(3 arenas with history: the programs of the test above serve this one too.)"""
    cfg = _cfg(0.12)
    out = lab.rollout(bdpd_jax.lab.prepare(cfg), 3, seed=3, history=True)
    res = bdpd_jax.simulate(cfg, n_arenas=3, seed=3)
    np.testing.assert_array_equal(np.asarray(out.state.turn), res.summary.turns_played.to_numpy())
    np.testing.assert_array_equal(np.asarray(out.state.wealth)[0], res.summary.wealth_0.to_numpy())


def test_prepare_once_per_content_and_bad_runs_refused() -> None:
    a = bdpd_jax.lab.prepare(_cfg(0.2))
    assert bdpd_jax.lab.prepare(copy.deepcopy(_cfg(0.2))) is a and a.params_for(6) is a.params
    assert int(a.params_for(9).max_turns) == 9 and int(a.params.max_turns) == 6
    other = copy.deepcopy(_cfg(0.2))
    other["players"] = other["players"][:3] + [{"strategy": "idle"}]
    with pytest.raises(ValueError, match="share one Game"):
        lab.rollout([a, bdpd_jax.lab.prepare(other)], 2)
    with pytest.raises(ValueError, match="n_arenas"):
        lab.batch_params(a, 0)
    with pytest.raises(ValueError, match="runs"):
        lab.rollout([], 2)
