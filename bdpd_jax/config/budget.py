"""The run budget: one bound on the size of every run a user can ask for, checked from the
counts alone before anything is allocated (docs/semantics/sweeps.md, "Run budget").

A run's size is its arena-turn-player steps: arenas x turns x players (``simulate``: n_arenas;
a sweep: points x replicates; a search generation: population x replicates). A sweep's grid
product and ``n_samples`` are checked with the replicates, turns and players they will run
with before their table is made, so a spec of a few bytes cannot ask for terabytes.

Default ``DEFAULT_RUN_BUDGET`` (1e11 steps: ~15 minutes of a 2-core CPU at the bench's
3e7 arena-turns/s of 4 players); a bigger machine raises it with the ``budget`` argument of
the checks or the ``BDPD_RUN_BUDGET`` environment variable (read at each check).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .game import ArenaConfig

#: arena-turn-player steps one run may ask for unless the operator raises it
DEFAULT_RUN_BUDGET: int = 10**11
#: the environment variable that overrides DEFAULT_RUN_BUDGET (an integer, ``_`` allowed)
BUDGET_ENV: str = "BDPD_RUN_BUDGET"


def run_budget(budget: int | None = None) -> int:
    """The budget in force: ``budget`` when given, else ``$BDPD_RUN_BUDGET``, else the default;
    ValueError naming the argument or the variable when it is not an integer >= 1."""
    where = "budget"
    if budget is None:
        raw = os.environ.get(BUDGET_ENV)
        if raw is None:
            return DEFAULT_RUN_BUDGET
        where = BUDGET_ENV
        try:
            budget = int(raw.strip())
        except ValueError:
            raise ValueError(f"{BUDGET_ENV}: must be an integer >= 1, got {raw[:64]!r}") from None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"{where}: must be an integer >= 1, got {budget!r}")
    return budget


def check_budget(field: str, value: Any, factors: Mapping[str, int], budget: int | None = None) -> int:
    """The steps of a run of ``factors`` (``{"population": 64, "replicates": R, "turns": T,
    "players": N}``, multiplied as Python ints: no overflow); ValueError naming ``field``,
    its ``value``, the product and the budget when over it."""
    total = math.prod(int(v) for v in factors.values())
    limit = run_budget(budget)
    if total > limit:
        product = " x ".join(f"{int(v):,} {k}" for k, v in factors.items())
        raise ValueError(
            f"{field}: {value} makes a run of {product} = {total:,} arena-turn-player steps, over the run "
            f"budget of {limit:,} (raise it with {BUDGET_ENV}; docs/semantics/sweeps.md, Run budget)"
        )
    return total


def arena_steps(config: ArenaConfig, turns: int | None = None) -> dict[str, int]:
    """``{"turns": T, "players": N}`` of one arena of ``config`` (``turns`` overrides
    model.maxTurns; a config without players counts one)."""
    return {"turns": int(turns or config.model.max_turns), "players": max(1, len(config.players or []))}


def grid_size(grid: Mapping[str, Sequence[Any]]) -> int:
    """The number of points of a grid, ``prod(len(values))``, without making one."""
    return math.prod(len(v) for v in grid.values())


__all__ = ["DEFAULT_RUN_BUDGET", "BUDGET_ENV", "run_budget", "check_budget", "arena_steps", "grid_size"]
