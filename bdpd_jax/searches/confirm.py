"""Confirmed winners: before a search reports ``best`` and ``front``, its top candidates are
evaluated again on fresh replicates, and those estimates decide.

Each candidate of a search is judged on its own generation's few replicates; among the many
near a constraint a lucky one looks feasible (the winner's curse). So ``top`` distinct
candidates (:func:`chosen`: the best by the search's own order and some spread inside the
feasible set; with several objectives the in-sample front) are run again as one sweep of
``replicates`` arenas each, drawn from a seed no generation uses (:func:`confirm_seed`),
with common random numbers (the candidates meet the same streams).
Their point columns come back as ``confirm_<column>`` in the history (NaN for the rows not
confirmed), with ``confirm_violation`` and ``confirm_feasible``. See docs/semantics/sweeps.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..prepare.prepared import PreparedRun
from ..run.options import RunOptions
from ..sweeps import sweep as sweep_module
from .ranking import front_mask, minimised, order, violation
from .space import Space

PREFIX = "confirm_"
# Fresh replicates per confirmed candidate (a survival rate near 0.9 to about +-0.04, 95 %).
CONFIRM_REPLICATES = 256
# Candidates confirmed with one objective (the search's first ``CONFIRM_TOP`` distinct points).
CONFIRM_TOP = 8


def confirm_seed(seed: int, generation_seeds: set[int]) -> int:
    """The confirmation's sweep seed: a uint32 from numpy's SeedSequence of ``seed`` on its own
    branch (spawn key 1), never one a generation used (the next draw if it collides), so its
    arenas' keys are not the search's."""
    words = np.random.SeedSequence(int(seed), spawn_key=(1,)).generate_state(8)
    return int(next(w for w in words if int(w) not in generation_seeds))


def chosen(history: pd.DataFrame, names: list[str], objectives: list, top: int, most: int) -> pd.DataFrame:
    """The distinct points to confirm (columns = paths). One objective: the first half of
    ``top`` by the search's order, and the other half spread over the in-sample feasible ones
    from the best to the worst objective, denser near the best (at ``(k / m)^3`` of the range):
    a search that converged onto a constraint's boundary holds many lucky candidates there,
    and the confirmation then still meets candidates a little inside it. Several objectives:
    the in-sample front (at most ``most``, spread along the first objective)."""
    viol = history["violation"].to_numpy(float)
    if len(objectives) > 1:
        f = minimised(history, objectives)
        rows = history[front_mask(f, viol)].sort_values(objectives[0][0], kind="stable")
        pts = rows[names].drop_duplicates(ignore_index=True)
        if len(pts) > most:
            pts = pts.iloc[np.unique(np.linspace(0, len(pts) - 1, most).round().astype(int))]
        return pts.reset_index(drop=True)
    f = minimised(history, objectives[:1])[:, 0]
    idx = order(f, viol)
    ranked = history.iloc[idx][names].assign(_f=f[idx], _ok=viol[idx] <= 0).drop_duplicates(names)
    head = ranked.iloc[: -(-top // 2)]
    ok = ranked[ranked["_ok"].to_numpy() & np.isfinite(ranked["_f"].to_numpy())]
    picks = [head]
    if len(ok):
        fv = ok["_f"].to_numpy()
        m = top - len(head)
        targets = fv[0] + (fv[-1] - fv[0]) * (np.arange(1, m + 1) / max(m, 1)) ** 3
        picks.append(ok.iloc[np.minimum(np.searchsorted(fv, targets), len(ok) - 1)])
    pts = pd.concat(picks).drop_duplicates(names)
    if len(pts) < top:  # (spread picks fell on the head: fill in the search's order)
        pts = pd.concat([pts, ranked]).drop_duplicates(names).iloc[:top]
    return pts[names].reset_index(drop=True)


def confirm(
    base: PreparedRun,
    sp: Space,
    history: pd.DataFrame,
    objectives: list,
    constraints: list,
    *,
    top: int,
    population: int,
    options: RunOptions,
    replicates: int,
    seed: int,
) -> pd.DataFrame:
    """``history`` with the ``confirm_*`` columns of its top candidates (see the module):
    ``replicates`` fresh ones each, drawn from ``seed``; ``options``: the search's.

    The confirmation runs the search's own compiled program: its points are padded to
    ``population`` rows and its chunks are a generation's width (a generation's program runs
    them; no compile), so it costs ``population x replicates`` arenas whatever ``top`` is."""
    names = list(sp.names)
    pts = chosen(history, names, objectives, top, population)
    k = len(pts)
    padded = pts.iloc[np.minimum(np.arange(population), k - 1)].reset_index(drop=True)
    width = min(int(options.max_batch), population * int(options.replicates))  # a generation's chunks
    res = sweep_module.run_points(
        base, padded, options.replace(replicates=replicates, seed=seed, common_random=True, max_batch=width)
    )
    got = res.points.sort_values("point").iloc[:k].reset_index(drop=True)
    est = got.drop(columns=["point"])
    v = violation(est, constraints)
    out = est.drop(columns=names).add_prefix(PREFIX)
    out[PREFIX + "violation"] = v
    out[PREFIX + "feasible"] = v <= 0
    # each history row of a confirmed point gets its estimates (a point asked twice: both rows)
    keyed = pd.concat([pts, out], axis=1)
    merged = history.merge(keyed, on=names, how="left", sort=False)
    merged[PREFIX + "feasible"] = merged[PREFIX + "feasible"].astype("boolean")
    return merged


def confirmed_view(history: pd.DataFrame, names: list[str]) -> pd.DataFrame | None:
    """The confirmed rows with their ``confirm_*`` columns in the plain columns' places (so
    the ranking reads them as it reads a generation's), one row per point; None when the
    history holds no confirmation."""
    if PREFIX + "violation" not in history or not history[PREFIX + "violation"].notna().any():
        return None
    rows = history[history[PREFIX + "violation"].notna()]
    rows = rows.loc[~rows.duplicated(names)]
    plain = {c: c[len(PREFIX) :] for c in rows.columns if c.startswith(PREFIX)}
    view = rows.drop(columns=[c for c in plain.values() if c in rows.columns]).rename(columns=plain)
    view["feasible"] = view["feasible"].astype(bool)
    counts = [c for c in plain.values() if c == "replicates" or c.endswith("_n")]
    view[counts] = view[counts].astype(np.int64)  # (float in the history: NaN where not confirmed)
    return view
