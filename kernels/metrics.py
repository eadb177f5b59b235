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

import jax.numpy as jnp
import numpy as np

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


def sum_players(x, axis: int, xp):
    """Sum over the players' ``axis``, one player after the other (unrolled: the same float
    order whatever the array library or layout, so host and kernel give the same numbers)."""
    n = x.shape[axis]
    if not unroll.players(n):
        return xp.sum(x, axis=axis)
    total = xp.take(x, 0, axis=axis)
    for i in range(1, n):
        total = total + xp.take(x, i, axis=axis)
    return total


def governance_metrics(
    actual: Any,
    announced: Any,
    sanction_count: Any,
    regen: Any,
    playing: Any,
    share_defined: Any = True,
    axis: int = -1,
    xp: Any = jnp,
) -> dict[str, Any]:
    """actual, announced: float[N] (announced NaN = null); sanction_count: float[] fired this
    turn; playing: bool[N] players taking part this turn (N in the denominators);
    share_defined: bool[], whether regen / N is a sustainable share this turn. ``axis``: the
    players' axis of actual, announced and playing (the others have none: leading turn and
    trailing batch axes broadcast); ``xp``: jax.numpy in the kernels, numpy for records on
    the host (:func:`record_metrics`)."""
    dt = actual.dtype

    def count(mask):  # players where mask holds, as a float of the records' dtype
        return sum_players(mask.astype(dt), axis, xp)

    nf = count(playing)
    has_n = nf > 0
    n_safe = xp.where(has_n, nf, xp.ones_like(nf))
    over = over_share(actual, xp.expand_dims(xp.asarray(regen, dt), axis), xp.expand_dims(n_safe, axis))
    said = ~xp.isnan(announced) & playing
    n_said = count(said)
    gap = xp.where(said, xp.abs(xp.where(said, announced, 0.0) - actual), 0.0).astype(dt)
    nan = xp.asarray(xp.nan, dt)

    def frac(mask):
        return xp.where(has_n, count(mask & playing) / n_safe, nan)

    shared = xp.asarray(share_defined)
    return {
        "cooperation_index": xp.where(shared, frac(~over), nan),
        "lie_score": xp.where(n_said > 0, sum_players(gap, axis, xp) / xp.maximum(n_said, 1.0), nan),
        "announce_frequency": frac(said),
        "silent_defection": xp.where(shared, frac(~said & over), nan),
        "sanction_rate": xp.where(has_n, xp.asarray(sanction_count, dt) / n_safe, nan),
    }


def record_metrics(actual: Any, announced: Any, sanctioned: Any, regen: Any, played: Any, share_defined: Any) -> dict:
    """The five metrics of turn records (derived from the record, never stored): one arena's
    turn (actual float[N], regen float[]) or records with the batch axis last (actual
    float[..., N, B], regen float[..., B]), as jax or numpy arrays (the result is of the same
    library). A player takes part in a turn its arena played; the sanction rate counts the
    players a sanction fired on."""
    xp = np if isinstance(actual, np.ndarray) else jnp
    axis = -1 if np.ndim(actual) == 1 else -2
    playing = xp.expand_dims(xp.asarray(played), axis) & xp.ones(actual.shape, bool)
    sanctions = sum_players((xp.asarray(sanctioned) & playing).astype(actual.dtype), axis, xp)
    return governance_metrics(actual, announced, sanctions, regen, playing, share_defined, axis, xp)
