"""GovSim outcome metrics per arena (Piatti et al. 2024, 'Cooperate or Collapse'), so batch
results sit next to published LLM numbers. numpy on the final state and either the
governance layer's accumulators or the per-turn records.

- ``survival_time``: turns played (the game stops at collapse, so this is the collapse turn
  of a collapsed arena and ``maxTurns`` for a surviving one);
- ``survived``: the commons is alive after ``maxTurns`` turns;
- ``total_gain``: sum over players and turns of actual harvests (sanctions not deducted);
- ``efficiency``: ``min(1, total_gain / (maxTurns x f0))`` with ``f0`` the sustainable
  per-turn yield of the engine (logistic: the maximum sustainable yield ``r K / 4``; NaN for
  engines without a closed form);
- ``equality``: ``1 - Gini`` of per-player gains, ``1 - sum_ij |g_i - g_j| / (2 N sum_i g_i)``
  (1 when nobody gained anything: all gains equal);
- ``over_usage``: fraction of (player, turn) decisions with ``actual > share + eps``,
  ``share = regen / N`` as in the governance metrics, over the turns where that share is
  defined (the rule of kernels/metrics.py: not on a collapse turn, never on Seneca); NaN
  when no turn had one, and when unknown (no history and no governance layer).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..kernels.metrics import gini, over_share
from ..prepare.game import sustainable_yield  # noqa: F401 (f0, the engine's rule: prepared once per run)
from . import schema

GOVSIM_COLUMNS = schema.names(schema.GOVSIM)


def equality(gains: np.ndarray) -> np.ndarray:
    """gains float[N, B] -> 1 - Gini per arena, by the kernels' one Gini (kernels/metrics.py,
    also the ``giniWealth`` trigger) in numpy along the players' axis, so an arena's value
    does not depend on the batch it ran in."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - gini(np.asarray(gains), axis=0, xp=np)


def efficiency(total: np.ndarray, max_turns, f0) -> np.ndarray:
    """``min(1, total / (max_turns x f0))``, NaN where f0 is not a positive number; the turns
    and f0 may be one per arena (a sweep's points differ in both)."""
    f0 = np.asarray(f0, dtype=float)
    ok = np.isfinite(f0) & (f0 > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        eff = np.minimum(1.0, total / (max_turns * np.where(ok, f0, 1.0)))
    return np.where(ok, eff, np.nan)


def govsim_columns(turns_played: np.ndarray, max_turns, f0, gains: np.ndarray,
                   over: np.ndarray | None, judged: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """turns_played int[B]; max_turns and f0: one, or one per arena; gains float[N, B]
    per-player harvest totals; over int[N, B] decisions over the share (None = unknown);
    judged int[B] turns with a defined share (None = every turn played)."""
    n = gains.shape[0]
    total = gains.sum(axis=0)
    judged = turns_played if judged is None else np.asarray(judged)
    with np.errstate(invalid="ignore", divide="ignore"):
        ou = (over.sum(axis=0) / (n * np.maximum(judged, 1))) if over is not None else np.full_like(total, np.nan)
    ou = np.where(judged > 0, ou, np.nan)
    return {
        "survival_time": turns_played.astype(np.int32),
        "total_gain": total,
        "efficiency": efficiency(total, max_turns, f0),
        "equality": equality(gains),
        "over_usage": ou,
    }


def from_records(actual: Any, regen: Any, played: Any, defined: Any = None, xp: Any = np, player_axis: int = 1,
                 ) -> tuple[Any, Any, Any]:
    """actual float[T, N, B], regen float[T, B], played bool[T, B], defined bool[T, B] (the
    share was defined; None = every turn) -> (gains float[N, B], over int[N, B], judged int[B]).
    ``player_axis`` 2: actual is float[T, B, N] (the scan's layout; gains and over [B, N]).
    ``xp``: numpy, or jax.numpy inside a run program (the same integer counts)."""
    n = actual.shape[player_axis]
    ok = played if defined is None else played & defined
    each = (lambda x: x[:, None, :]) if player_axis == 1 else (lambda x: x[:, :, None])  # noqa: E731
    gains = xp.where(each(played), actual, 0.0).sum(axis=0)
    over = (each(ok) & over_share(actual, each(regen), n)).sum(axis=0)
    return gains, over, ok.sum(axis=0)
