"""The points of a sweep: a grid, uniform samples in a box, or an explicit table (columns =
config paths). Used by :mod:`bdpd_jax.sweep`."""

from __future__ import annotations

import itertools
import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..config.budget import check_budget, grid_size, run_budget
from ..config.limits import to_float

# ----------------------------------------------------------------------------- points


def grid_points(grid: dict[str, Sequence[Any]], per_point: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Cartesian product of ``{path: values}`` (the first path varies slowest). Its size, times
    ``per_point`` (``{"replicates": R, "turns": T, "players": N}``), is checked against the run
    budget (bdpd_jax/config/budget.py) before the product is made."""
    if not isinstance(grid, dict) or not grid:
        raise ValueError(f"grid: must be a non-empty dict path -> list of values, got {grid!r}")
    for k, v in grid.items():
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) == 0:
            raise ValueError(f"grid[{k!r}]: must be a non-empty list of values, got {v!r}")
    size = grid_size(grid)
    sizes = " x ".join(str(len(v)) for v in grid.values())
    check_budget("grid", f"{sizes} values = {size:,} points", {"points": size, **(per_point or {})})
    names = list(grid)
    rows = list(itertools.product(*[list(grid[n]) for n in names]))
    return pd.DataFrame({n: [r[j] for r in rows] for j, n in enumerate(names)}, columns=names)


def sample_points(
    samples: dict[str, tuple[float, float]],
    n_samples: int | None,
    seed: int,
    per_point: Mapping[str, int] | None = None,
) -> pd.DataFrame:
    """``n_samples`` points drawn uniformly in the boxes ``{path: (low, high)}``; ``n_samples``
    times ``per_point`` is checked against the run budget before any is drawn."""
    if not isinstance(samples, dict) or not samples:
        raise ValueError(f"samples: must be a non-empty dict path -> (low, high), got {samples!r}")
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples: must be an integer >= 1 with samples=, got {n_samples!r}")
    check_budget("n_samples", n_samples, {"points": int(n_samples), **(per_point or {})})
    names = list(samples)
    lo, hi = [], []
    for n in names:
        b = samples[n]
        if not (isinstance(b, (tuple, list)) and len(b) == 2):
            raise ValueError(f"samples[{n!r}]: must be (low, high) with low <= high, got {b!r:.200}")
        a, z = to_float(b[0], f"samples[{n!r}][0]"), to_float(b[1], f"samples[{n!r}][1]")
        if not (math.isfinite(a) and math.isfinite(z) and a <= z):
            raise ValueError(f"samples[{n!r}]: must be finite (low, high) with low <= high, got {b!r:.200}")
        lo.append(a)
        hi.append(z)
    x = np.random.default_rng(seed).uniform(lo, hi, size=(int(n_samples), len(names)))
    return pd.DataFrame(x, columns=names)


def explicit_points(points: Any, names: Sequence[str] | None) -> pd.DataFrame:
    if isinstance(points, pd.DataFrame):
        if names is not None:
            points = points[list(names)]
        if points.shape[1] == 0 or len(points) == 0:
            raise ValueError("points: the DataFrame has no columns or no rows")
        return points.reset_index(drop=True)
    x = np.asarray(points)
    if x.ndim != 2:
        raise ValueError(f"points: must be a DataFrame or an (N, D) array, got shape {x.shape}")
    if names is None or len(names) != x.shape[1]:
        raise ValueError(f"names: an (N, D) points array needs D={x.shape[1]} parameter paths, got {names!r}")
    if x.shape[0] == 0:
        raise ValueError("points: no rows")
    return pd.DataFrame(x, columns=list(names))


# Tables of grids and samples asked before (a warm sweep makes none: a 16-row frame costs as
# much as the sweep's per-point statistics); keyed by their JSON with the run budget they were
# checked against, so only plain values (lists of numbers, strings, bools) are kept, and at
# most MAX_TABLE_KEY characters of it.
_TABLES: OrderedDict[str, pd.DataFrame] = OrderedDict()
MAX_TABLES = 8
MAX_TABLE_KEY = 100_000


def points_table(
    grid=None, samples=None, points=None, *, names=None, n_samples=None, seed: int = 0, per_point=None
) -> pd.DataFrame:
    """The points of a sweep from exactly one of grid=, samples= (with n_samples=), points=;
    ``per_point``: the steps of one point (see :func:`grid_points`). A grid's or samples'
    table is made once and then reused (read-only: the sweep plan copies what it keeps)."""
    given = [x is not None for x in (grid, samples, points)]
    if sum(given) != 1:
        raise ValueError("sweep: give exactly one of grid=, samples= (with n_samples=) or points=")
    if points is not None:
        return explicit_points(points, names)
    try:
        key = json.dumps([grid, samples, n_samples, seed, per_point, run_budget()])  # (the budget: read per check)
    except (TypeError, ValueError):  # numpy values and the like: made afresh
        key = ""
    hit = _TABLES.get(key) if key else None
    if hit is not None:
        _TABLES.move_to_end(key)
        return hit
    table = grid_points(grid, per_point) if grid is not None else sample_points(samples, n_samples, seed, per_point)
    if key and len(key) <= MAX_TABLE_KEY:
        _TABLES[key] = table
        while len(_TABLES) > MAX_TABLES:
            _TABLES.popitem(last=False)
    return table
