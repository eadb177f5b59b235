"""Global sensitivity analysis on top of :func:`bdpd_jax.sweep.sweep`.

- :func:`model`: ``f(X: (N, D)) -> (N, k)``, one batched run per call, for SALib, the EMA
  workbench or any optimiser: row ``n`` of ``X`` gives the values of ``names`` (config
  paths), column ``j`` of the result is output ``outputs[j]`` averaged over ``replicates``.
- :func:`sobol` / :func:`morris`: sample with SALib, run the model once, analyse with SALib,
  return one tidy row per (output, parameter).

An output is any numeric column of :attr:`SweepResults.arenas` (``survived``,
``survival_time``, ``total_gain``, ``efficiency``, ``equality``, ``wealth_mean``,
``wealth_0``, ...) or a governance metric (``cooperation_index`` ... or
``mean_cooperation_index``: its per-arena mean over turns; asking for one keeps history),
or ``gini`` (= 1 - ``equality``: the Gini coefficient of the players' gains).

``transform=``: factors that are not one config path each (a multiplier on a whole
sanction ladder, one intensity shared by several players): ``names`` are then the factor
names and ``transform(frame of factors) -> frame of config paths`` gives each point's
values (a column may hold lists, e.g. a ladder); see :func:`scale_list` and
docs/semantics.md §12.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..config.budget import check_budget
from ..config.game import ArenaConfig
from ..config.limits import DEFAULT_MAX_BATCH
from ..kernels.metrics import METRICS
from ..prepare.prepared import PreparedRun, prepare
from ..run.options import RunOptions
from .results import gini
from .sweep import check_paths, config_base, point_steps, run_points

# Outputs computed from the arena rows.
DERIVED: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "gini": lambda a: pd.Series(
        gini(pd.to_numeric(a["equality"].astype("Float64"), errors="coerce").astype(float)), index=a.index
    ),
}


def _output_column(name: str) -> str:
    return f"mean_{name}" if name in METRICS else name


def scale_list(base: Sequence[float], factor: np.ndarray) -> list[list[float]]:
    """One list per factor value: ``base`` times it (e.g. a sanction ladder's scale)."""
    b = np.asarray(base, dtype=float)
    return [[float(v) for v in b * f] for f in np.asarray(factor, dtype=float)]


def _point_means(arenas: pd.DataFrame, names: list[str], outputs: tuple, cols: list[str]) -> np.ndarray:
    """(points, outputs): each point's mean of each output column over its replicates
    (NaN-skipping; derived columns added first). ValueError naming an unknown output."""
    for c in cols:
        if c in DERIVED and c not in arenas.columns:
            arenas[c] = DERIVED[c](arenas)
    missing = [o for o, c in zip(outputs, cols, strict=True) if c not in arenas.columns]
    if missing:
        known = [c for c in arenas.columns if c not in ("point", "replicate", "arena", *names)]
        raise ValueError(f"outputs: unknown {missing}; known: {known + list(METRICS) + list(DERIVED)}")
    a = arenas[["point"]].copy()
    for c in cols:
        a[c] = pd.to_numeric(arenas[c].astype("Float64"), errors="coerce").astype(float)
    return a.groupby("point", sort=True)[cols].mean().to_numpy(dtype=float)


@dataclass(frozen=True)
class PointModel:
    """``f(X) -> Y`` (:func:`model`), with the factor ``names`` and ``outputs`` it was built for."""

    run: Callable[[Any], np.ndarray]
    names: list[str]
    outputs: tuple[str, ...]
    base: PreparedRun  # the base config, prepared once
    options: RunOptions  # how every call runs its points

    def __call__(self, X: Any) -> np.ndarray:
        return self.run(X)


def model(
    config: ArenaConfig | dict | str,
    names: Sequence[str],
    outputs: Sequence[str] = ("survived",),
    replicates: int = 1,
    seed: int = 0,
    *,
    turns: int | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    generator: str = "hash",
    progress: bool | None = False,
    common_random: bool = True,
    transform: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    memory_budget: int | None = None,
    devices: Any = None,
) -> PointModel:
    """A function ``f(X) -> Y`` running the points ``X`` (N, D) as one sweep.

    ``Y[n, j]``: the mean over ``replicates`` of output ``outputs[j]`` at point ``X[n]``
    (NaN-skipping, e.g. ``collapse_turn`` averages collapsed replicates only). A float given
    for an int field (e.g. ``model.maxTurns``) is rounded. Calls with the same ``X`` return
    the same ``Y``. common_random (default True): replicate ``r`` of every point draws
    from ``(seed, r)``, so ``f`` is a deterministic function of the values for a given seed
    and differences between points are not blurred by independent noise (Sobol/Morris
    estimators assume a deterministic model); False: arena ``i`` draws from ``(seed, i)``.
    transform: ``names`` are factor names and ``transform(DataFrame(X, columns=names))``
        returns the points as a DataFrame of config paths (same rows).
    """
    base = prepare(config, generator=generator)  # validated and built once: every call's sweep starts from it
    cfg = base.config
    names = [str(n) for n in names]
    if not names:
        raise ValueError("names: at least one parameter path")
    if isinstance(outputs, str):
        outputs = (outputs,)
    outputs = tuple(outputs)
    if not outputs:
        raise ValueError("outputs: at least one output column")
    if transform is None:
        check_paths(config_base(cfg), names)
    cols = [_output_column(o) for o in outputs]
    options = RunOptions(
        replicates=replicates,
        seed=seed,
        history=any(c.startswith("mean_") and c[5:] in METRICS for c in cols),
        turns=turns,
        max_batch=max_batch,
        memory_budget=memory_budget,
        generator=generator,
        round_ints=True,
        common_random=common_random,
        devices=devices,
        progress=progress,
    )

    def f(X: Any) -> np.ndarray:
        x = np.asarray(X, dtype=float)
        if x.ndim == 1 and len(names) == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != len(names):
            raise ValueError(f"X: must have shape (N, {len(names)}) for names {names}, got {x.shape}")
        table = pd.DataFrame(x, columns=names)
        if transform is not None:
            table = transform(table)
            if not isinstance(table, pd.DataFrame) or len(table) != len(x):
                raise ValueError(f"transform: must return a DataFrame of config paths with {len(x)} rows")
            table = table.reset_index(drop=True)
        res = run_points(base, table, options)
        return _point_means(res.arenas, names, outputs, cols)

    return PointModel(f, names, outputs, base, options)


def _problem(problem: dict) -> dict:
    if not isinstance(problem, dict) or "names" not in problem or "bounds" not in problem:
        raise ValueError(f"problem: a SALib problem {{'names': [...], 'bounds': [[lo, hi], ...]}}, got {problem!r}")
    p = dict(problem)
    p["names"] = [str(n) for n in p["names"]]
    p.setdefault("num_vars", len(p["names"]))
    if p["num_vars"] != len(p["names"]) or len(p["bounds"]) != len(p["names"]):
        raise ValueError(f"problem: num_vars, names and bounds disagree: {problem!r}")
    return p


def _check_size(f: PointModel, n: Any, per_n: int) -> None:
    """``n`` is a count and its ``n * per_n`` points fit the run budget (with the model's
    replicates, turns and players) before SALib draws them."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: must be an integer >= 1, got {n!r}")
    check_budget("n", n, {"points": int(n) * per_n, **point_steps(f.base, f.options)})


def _index_rows(f: PointModel, Y: np.ndarray, analyse: Callable[[np.ndarray], Any], keys: tuple) -> pd.DataFrame:
    """One row per (output, parameter) of SALib's indices ``keys``, ``analyse(Y[:, j])``
    giving output ``j``'s."""
    rows = []
    for j, out in enumerate(f.outputs):
        si = analyse(Y[:, j])
        for i, name in enumerate(f.names):
            rows.append({"output": out, "parameter": name, **{k: float(si[k][i]) for k in keys}})
    return pd.DataFrame(rows, columns=["output", "parameter", *keys])


def sobol(
    config: ArenaConfig | dict | str,
    problem: dict,
    n: int = 256,
    outputs: Sequence[str] = ("survived",),
    replicates: int = 1,
    seed: int = 0,
    *,
    calc_second_order: bool = False,
    num_resamples: int = 100,
    conf_level: float = 0.95,
    **model_kw: Any,
) -> pd.DataFrame:
    """Sobol indices via SALib (Saltelli/Sobol' sampling, ``n`` a power of 2; the model runs
    ``n * (D + 2)`` points, ``n * (2D + 2)`` with second order, times ``replicates``).

    Returns one row per (output, parameter): ``S1``, ``S1_conf``, ``ST``, ``ST_conf``.
    """
    p = _problem(problem)
    d = len(p["names"])
    f = model(config, p["names"], outputs, replicates, seed, **model_kw)
    _check_size(f, n, (2 * d + 2) if calc_second_order else (d + 2))
    # optional dependency (the studies extra), imported once the request is known to be runnable
    from SALib.analyze import sobol as analyze
    from SALib.sample import sobol as sample

    X = sample.sample(p, int(n), calc_second_order=calc_second_order, seed=seed)
    kw = {"num_resamples": num_resamples, "conf_level": conf_level, "print_to_console": False, "seed": seed}
    return _index_rows(
        f,
        f(X),
        lambda y: analyze.analyze(p, y, calc_second_order=calc_second_order, **kw),
        ("S1", "S1_conf", "ST", "ST_conf"),
    )


def morris(
    config: ArenaConfig | dict | str,
    problem: dict,
    n: int = 20,
    outputs: Sequence[str] = ("survived",),
    replicates: int = 1,
    seed: int = 0,
    *,
    num_levels: int = 4,
    num_resamples: int = 100,
    conf_level: float = 0.95,
    **model_kw: Any,
) -> pd.DataFrame:
    """Morris elementary effects via SALib (``n`` trajectories: ``n * (D + 1)`` points).

    Returns one row per (output, parameter): ``mu``, ``mu_star``, ``mu_star_conf``, ``sigma``.
    """
    p = _problem(problem)
    f = model(config, p["names"], outputs, replicates, seed, **model_kw)
    _check_size(f, n, len(p["names"]) + 1)
    # optional dependency (the studies extra), imported once the request is known to be runnable
    from SALib.analyze import morris as analyze
    from SALib.sample import morris as sample

    X = sample.sample(p, int(n), num_levels=num_levels, seed=seed)
    kw = {"num_resamples": num_resamples, "conf_level": conf_level, "print_to_console": False, "seed": seed}
    return _index_rows(
        f,
        f(X),
        lambda y: analyze.analyze(p, X, y, num_levels=num_levels, **kw),
        ("mu", "mu_star", "mu_star_conf", "sigma"),
    )
