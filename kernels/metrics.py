"""The five governance metrics of Table 2.1 (000_* section 2.3), for one arena and one turn.

share = regen / N is the sustainable per-player harvest under this turn's regeneration;
eps = 1e-6 makes a harvest exactly at the share count as cooperating. A metric whose input
is unavailable is NaN (the seed's null), never 0: ``cooperation_index`` and
``silent_defection`` are NaN where the share is undefined (``share_defined`` False: the
dynamics did not run on a collapse turn, or the engine's stock has no regeneration to share,
docs/semantics.md §11).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from . import unroll

EPS = 1e-6
METRICS: tuple[str, ...] = (
    "cooperation_index",
    "lie_score",
    "announce_frequency",
    "silent_defection",
    "sanction_rate",
)


def over_share(actual: Any, regen: Any, n: Any) -> Any:  # jax or numpy arrays alike
    """The over-share rule of Table 2.1, in one place: ``actual > regen / n + EPS``. Plain
    operators, so the host's numpy summaries (GovSim ``over_usage``) apply the same rule."""
    return actual > regen / n + EPS


def sort_players(w, axis: int = -1, xp=jnp):
    """``w`` sorted along its players' ``axis``. Unrolled over players (kernels/unroll.py): an
    odd-even transposition network of exact min/max over the other axes, the same values as
    a sort (a library sort of many short rows, numpy's or XLA's, costs far more: numpy at
    B = 16384, 4 players, 0.05 ms against 0.7 ms; bench/README.md); in array form, the
    library's sort."""
    n = w.shape[axis]
    if not unroll.players(n):
        return xp.sort(w, axis=axis)
    xs = [xp.take(w, i, axis=axis) for i in range(n)]
    for r in range(n):
        for i in range(r % 2, n - 1, 2):
            xs[i], xs[i + 1] = xp.minimum(xs[i], xs[i + 1]), xp.maximum(xs[i], xs[i + 1])
    return xp.stack(xs, axis=axis % w.ndim)


def gini(w, axis: int = -1, xp=jnp):
    """Gini coefficient of non-negative values along ``axis`` (0 when their total is 0):
    sorted-rank formula. Array-library agnostic (``xp``: jnp in the kernels, numpy for the
    host's per-arena ``equality`` over [N, B], one reduction along one axis per arena)."""
    n = w.shape[axis]
    s = sort_players(xp.maximum(w, 0.0), axis, xp)
    tot = xp.sum(s, axis=axis)
    shape = [1] * s.ndim
    shape[axis] = n
    ranks = xp.arange(1, n + 1, dtype=s.dtype).reshape(shape)
    g = (2.0 * xp.sum(ranks * s, axis=axis)) / (n * xp.where(tot > 0, tot, 1.0)) - (n + 1.0) / n
    return xp.where(tot > 0, g, 0.0)


def governance_metrics(
    actual: jax.Array,
    announced: jax.Array,
    sanction_count: jax.Array,
    regen: jax.Array,
    playing: jax.Array,
    share_defined: jax.Array | bool = True,
) -> dict[str, jax.Array]:
    """actual, announced: float[N] (announced NaN = null); sanction_count: float[] fired this
    turn; playing: bool[N] players taking part this turn (N in the denominators);
    share_defined: bool[], whether regen / N is a sustainable share this turn."""
    n = jnp.sum(playing)
    nf = n.astype(actual.dtype)
    has_n = n > 0
    over = over_share(actual, regen, jnp.where(has_n, nf, 1.0))
    said = ~jnp.isnan(announced) & playing
    n_said = jnp.sum(said)
    gap = jnp.where(said, jnp.abs(jnp.where(said, announced, 0.0) - actual), 0.0)

    def frac(mask):
        return jnp.where(has_n, jnp.sum(mask & playing) / jnp.where(has_n, nf, 1.0), jnp.nan)

    shared = jnp.asarray(share_defined)
    return {
        "cooperation_index": jnp.where(shared, frac(~over), jnp.nan),
        "lie_score": jnp.where(n_said > 0, jnp.sum(gap) / jnp.maximum(n_said, 1), jnp.nan),
        "announce_frequency": frac(said),
        "silent_defection": jnp.where(shared, frac(~said & over), jnp.nan),
        "sanction_rate": jnp.where(has_n, sanction_count / jnp.where(has_n, nf, 1.0), jnp.nan),
    }
