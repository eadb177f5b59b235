"""Issue 35, the library's inputs: the run budget (checked from the counts before anything is
allocated), bounded config reads, user numbers too large for a float, env actions checked at
the edge, and damaged or foreign files named in their errors. Nothing here compiles a run."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

import bdpd_jax
from bdpd_jax.config.budget import BUDGET_ENV, DEFAULT_RUN_BUDGET, check_budget, run_budget
from bdpd_jax.searches import search
from bdpd_jax.sweeps.points import grid_points

SPACE = {"model.regenRate": (0.01, 0.6)}
# a peak this small means the refused run allocated nothing in proportion to its size
SMALL_PEAK = 64 << 20


@pytest.fixture(scope="module")
def config() -> dict:
    return bdpd_jax.default_config().model_dump(mode="json", by_alias=True)


def _refused(call: Callable[[], Any], match: str) -> str:
    """``call()`` raises a ValueError matching ``match`` with a small Python peak; its message."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match) as err:
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < SMALL_PEAK, peak
    return str(err.value)


# --------------------------------------------------------------------------- the run budget


def test_search_replicates_past_the_budget_are_refused_before_anything_is_allocated(config):
    msg = _refused(lambda: search(config, SPACE, ("survived_mean", "max"), replicates=10**12), "replicates")
    # the field, its value, the product and the budget
    assert "1000000000000" in msg and "64 population" in msg and f"{DEFAULT_RUN_BUDGET:,}" in msg
    assert "1,000,000,000,000 replicates x 30 turns x 4 players" in msg


def test_a_grid_past_the_budget_is_refused_before_its_product_is_made(config):
    grid = {p: [0.1 + i * 1e-4 for i in range(1000)] for p in ("a.b", "c.d", "e.f", "g.h")}
    msg = _refused(lambda: grid_points(grid), "grid")
    assert "1000 x 1000 x 1000 x 1000 values" in msg and "1,000,000,000,000 points" in msg
    paths = ["model.regenRate", "model.commonsCapacity", "model.initialStock", "players[0].intensity"]
    grid = {p: v for p, v in zip(paths, grid.values(), strict=True)}
    _refused(lambda: bdpd_jax.sweep(config, grid=grid), "grid: .* over the run budget")


def test_n_samples_past_the_budget_is_refused_before_any_is_drawn(config):
    samples = {"model.regenRate": (0.01, 0.5)}
    msg = _refused(lambda: bdpd_jax.sweep(config, samples=samples, n_samples=10**12), "n_samples")
    assert "1,000,000,000,000 points x 1 replicates x 30 turns x 4 players" in msg


def test_the_budget_counts_replicates_turns_and_players_and_is_raised_by_the_environment(config, monkeypatch):
    grid = {"model.regenRate": [0.1, 0.2]}
    monkeypatch.setenv(BUDGET_ENV, str(2 * 10 * 30 * 4 - 1))
    assert run_budget() == 2399
    with pytest.raises(ValueError, match="2 points x 10 replicates x 30 turns x 4 players = 2,400"):
        bdpd_jax.sweep(config, grid=grid, replicates=10)
    with pytest.raises(ValueError, match="n_arenas: 100 .* over the run budget of 2,399"):
        bdpd_jax.simulate(config, n_arenas=100, turns=10)
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=BUDGET_ENV):
        run_budget()
    monkeypatch.delenv(BUDGET_ENV)
    assert check_budget("x", 1, {"arenas": 10, "turns": 10}, budget=100) == 100
    with pytest.raises(ValueError, match="budget"):
        check_budget("x", 1, {"arenas": 10}, budget=0)
