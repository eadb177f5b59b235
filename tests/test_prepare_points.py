"""The batched prepare of a sweep's points (bdpd_jax/prepare/points.py): each point's config
is validated once (point 0 included, whatever build path), and each point's params, game and
sustainable yield are those ``prepare`` gives its config alone. Nothing here runs arenas."""

from __future__ import annotations

import copy
from collections import Counter

import jax
import numpy as np
import pandas as pd
import pytest
from payloads import sweep_config

import bdpd_jax
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.prepare import points as points_mod
from bdpd_jax.prepare.points import prepare_points
from bdpd_jax.sweeps import sweep as sweep_mod
from bdpd_jax.sweeps.plan import cached_plan

NAMES = ("model.regenRate", "players[1].intensity")
RATES = (0.07, 0.11, 0.17, 0.23)
INTENSITIES = (0.2, 0.45, 0.7, 0.95)


def _grid(rates=RATES, intensities=INTENSITIES) -> pd.DataFrame:
    return pd.DataFrame([(r, x) for r in rates for x in intensities], columns=list(NAMES))


def _config_at(base: dict, rate: float, intensity: float) -> dict:
    """A point's config written by hand (no sweep path machinery)."""
    d = copy.deepcopy(base)
    d["model"]["regenRate"] = rate
    d["players"][1]["intensity"] = intensity
    return d


def _fresh_config(tag: float) -> dict:
    """The sweep tests' config with a commons capacity no other test prepares (no cache hit)."""
    c = sweep_config()
    c["model"]["commonsCapacity"] = tag
    return c


def _count_validations(monkeypatch) -> list:
    """Every ArenaConfig.model_validate call from now on, by its input."""
    seen: list = []
    real = ArenaConfig.model_validate.__func__  # type: ignore[attr-defined]

    def counting(cls, obj, *a, **k):
        seen.append(obj)
        return real(cls, obj, *a, **k)

    monkeypatch.setattr(ArenaConfig, "model_validate", classmethod(counting))
    return seen


@pytest.mark.parametrize(("separable_min", "capacity"), [(4, 151.0), (10**9, 157.0)], ids=["separable", "per-point"])
def test_every_points_config_is_validated_once(monkeypatch, separable_min, capacity):
    base = bdpd_jax.lab.prepare(_fresh_config(capacity))
    rows: list[tuple] = []
    real_apply = points_mod.apply_values

    def counting_apply(cb, names, values, **kw):
        rows.append(tuple(float(v) for v in values))
        return real_apply(cb, names, values, **kw)

    monkeypatch.setattr(points_mod, "apply_values", counting_apply)
    validations = _count_validations(monkeypatch)
    table = _grid()
    pts = prepare_points(base, NAMES, table, separable_min=separable_min)
    assert pts.mode == ("separable" if separable_min == 4 else "per point")
    assert max(Counter(rows).values()) == 1  # no row of values validated twice
    assert Counter(rows)[tuple(table.iloc[0])] == 1  # point 0: once
    assert len(validations) == len(rows)  # and nothing else validates (the base was validated once, before)


def test_a_sweep_validates_its_base_once_and_each_point_once(monkeypatch):
    cfg = _fresh_config(163.0)
    monkeypatch.setattr(sweep_mod, "run_points", lambda base, table, options, chunks: cached_plan(base, table, options))
    validations = _count_validations(monkeypatch)
    plan = sweep_mod.sweep(cfg, grid={"model.regenRate": [0.1, 0.2]}, replicates=2)
    assert plan.n_points == 2
    assert len(validations) == 1 + 2  # the base (prepare, reused for the budget check), then each point


@pytest.mark.parametrize("separable_min", [4, 10**9], ids=["separable", "per-point"])
def test_each_points_params_equal_prepare_of_its_config_alone(separable_min):
    cfg = sweep_config()
    table = _grid()
    pts = prepare_points(bdpd_jax.lab.prepare(cfg), NAMES, table, separable_min=separable_min)
    assert pts.n_points == len(table)
    for i, (rate, intensity) in enumerate(table.itertuples(index=False, name=None)):
        alone = bdpd_jax.lab.prepare(_config_at(cfg, rate, intensity), governance=pts.governance)
        assert alone.game == pts.game
        assert pts.n_turns[i] == alone.config.model.max_turns
        np.testing.assert_equal(pts.max_yield[i], alone.max_yield)
        got, want = jax.tree_util.tree_leaves(pts.params_at(i)), jax.tree_util.tree_leaves(alone.params)
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_turns_set_every_points_max_turns_and_bad_points_name_their_path():
    cfg = sweep_config()
    base = bdpd_jax.lab.prepare(cfg)
    pts = prepare_points(base, ("model.maxTurns",), [(6,), (9,)])
    assert pts.n_turns == (6, 9)
    np.testing.assert_array_equal(np.asarray(pts.params_at(1).max_turns), 9)
    fixed = prepare_points(base, ("model.maxTurns",), [(6,), (9,)], turns=4)
    assert fixed.n_turns == (4, 4)
    np.testing.assert_array_equal(np.asarray(fixed.params_at(1).max_turns), 4)
    with pytest.raises(ValueError, match=r"point 1: model.regenRate=-0.5"):
        prepare_points(base, ("model.regenRate",), [(0.1,), (-0.5,)])


def test_a_grids_table_is_made_once_and_its_budget_still_checked(monkeypatch):
    from bdpd_jax.sweeps.points import points_table

    per = {"replicates": 10, "turns": 30, "players": 4}
    grid = {"model.regenRate": [0.1, 0.2, 0.3]}
    first = points_table(grid, per_point=per)
    assert points_table(grid, per_point=per) is first  # reused
    assert points_table({"model.regenRate": np.asarray([0.1, 0.2, 0.3])}, per_point=per) is not first  # numpy: afresh
    monkeypatch.setenv("BDPD_RUN_BUDGET", "100")
    with pytest.raises(ValueError, match="grid: .* over the run budget"):
        points_table(grid, per_point=per)
