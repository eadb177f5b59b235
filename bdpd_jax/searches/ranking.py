"""Objectives, constraints, the ranking of candidates and the Pareto front.

Feasible candidates rank before infeasible ones; feasible ones by their objective,
infeasible ones by their total violation (the sum over constraints of how far each misses
its bound, in the column's units). A missing value (NaN: e.g. a Gini with no gains) scores
worst: the objective +inf, a constraint's violation +inf.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..config.limits import to_float

SENSES = ("max", "min")
OPS = (">=", "<=")


def objectives_of(objective: Any) -> list[tuple[str, str]]:
    """``("col", "max")`` or a list of such pairs -> [(col, sense)]; ValueError otherwise."""
    pairs = (
        [objective]
        if isinstance(objective, tuple) and len(objective) == 2 and isinstance(objective[0], str)
        else list(objective)
        if isinstance(objective, (list, tuple))
        else None
    )
    if not pairs:
        raise ValueError(f"objective: a (column, 'max'|'min') pair or a list of them, got {objective!r}")
    out = []
    for p in pairs:
        if not (isinstance(p, (tuple, list)) and len(p) == 2 and isinstance(p[0], str) and p[1] in SENSES):
            raise ValueError(f"objective: each must be (column, 'max'|'min'), got {p!r}")
        out.append((p[0], p[1]))
    if len({c for c, _ in out}) != len(out):
        raise ValueError(f"objective: a column named twice in {objective!r}")
    return out


def constraints_of(constraints: Any) -> list[tuple[str, str, float]]:
    """``{"col": (">=", bound)}`` -> [(col, op, bound)]; ValueError otherwise."""
    if constraints is None:
        return []
    if not isinstance(constraints, dict):
        raise ValueError(f"constraints: a dict column -> ('>=' | '<=', bound), got {constraints!r}")
    out = []
    for c, v in constraints.items():
        ok = (
            isinstance(v, (tuple, list))
            and len(v) == 2
            and v[0] in OPS
            and isinstance(v[1], (int, float))
            and not isinstance(v[1], bool)
        )
        bound = to_float(v[1], f"constraints[{c!r}]") if ok else math.nan
        if not math.isfinite(bound):
            raise ValueError(f"constraints[{c!r}]: must be ('>=' | '<=', a finite number), got {v!r:.200}")
        out.append((str(c), v[0], bound))
    return out


def _column(points: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(points[col], errors="coerce").to_numpy(dtype=float)


def minimised(points: pd.DataFrame, objectives: Sequence[tuple[str, str]]) -> np.ndarray:
    """float[n, k]: each objective as a value to minimise (a 'max' one negated); NaN -> +inf."""
    cols = [(-1.0 if s == "max" else 1.0) * _column(points, c) for c, s in objectives]
    f = np.stack(cols, axis=1) if cols else np.zeros((len(points), 0))
    return np.where(np.isnan(f), np.inf, f)


def violation(points: pd.DataFrame, constraints: Sequence[tuple[str, str, float]]) -> np.ndarray:
    """float[n]: the total amount by which each candidate misses its constraints (0 = feasible)."""
    total = np.zeros(len(points))
    for c, op, bound in constraints:
        total = total + miss(_column(points, c), op, bound)
    return total


def miss(x: Any, op: str, bound: float, xp: Any = np) -> Any:
    """How far values ``x`` miss one constraint (0 when met, +inf when missing); ``xp`` numpy
    or jax.numpy (the device loop ranks with the same rule)."""
    short = xp.maximum(bound - x, 0.0) if op == ">=" else xp.maximum(x - bound, 0.0)
    return xp.where(xp.isnan(x), xp.inf, short)


def order(f: Any, viol: Any, xp: Any = np) -> Any:
    """Indices from best to worst for one objective (f: float[n], minimised): feasible ones by
    f, then infeasible ones by violation (ties: by f). Stable. ``xp``: numpy or jax.numpy."""
    infeasible = viol > 0
    return xp.lexsort((f, xp.where(infeasible, viol, 0.0), infeasible))


def ranks(f: np.ndarray, viol: np.ndarray) -> np.ndarray:
    """int[n]: each candidate's place in :func:`order` (0 = best)."""
    r = np.empty(len(f), np.int64)
    r[order(f, viol)] = np.arange(len(f))
    return r


def front_mask(f: np.ndarray, viol: np.ndarray) -> np.ndarray:
    """bool[n]: the Pareto set (f: float[n, k], minimised): the non-dominated feasible
    candidates; with none feasible, the least violating ones. pymoo's non-dominated sort."""
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    mask = np.zeros(len(f), bool)
    feasible = np.flatnonzero(viol <= 0)
    if feasible.size == 0:
        return viol == viol.min() if len(viol) else mask
    ok = feasible[np.all(np.isfinite(f[feasible]), axis=1)]
    if ok.size == 0:
        return mask
    first = NonDominatedSorting().do(f[ok], only_non_dominated_front=True)
    mask[ok[np.asarray(first, dtype=np.int64)]] = True
    return mask
