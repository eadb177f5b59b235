"""``sweep``: many parameter points of one config as ONE batched, once-compiled run.

Parameters are named by their config path (``model.regenRate``, ``players[2].intensity``,
``observability.commonsStock.noise``, ``perturbations[auto-sanction].payload.ladder``).
Every point x replicate is one arena: the point's values are applied to a copy of the
config (validated by pydantic, errors name the path and value), ``prepare_points``
(bdpd_jax/prepare/points.py) builds every point's Params from the base ``PreparedRun``, every
point must give the same static :class:`Game`, and the per-point Params are stacked along
the trailing batch axis and run through simulate's compiled program
(``run_batch``/``compiled_run``). Arena ``i`` (point ``i // replicates``, replicate
``i % replicates``) draws from ``arena_keys(seed, i)``, so its row equals
``simulate(config_at_point, n_arenas=1, seed=seed, arena_offset=i)``.

At scale (:class:`SweepPlan`): arenas run in chunks sized by ``max_batch`` or a
``memory_budget``; each chunk's batch axis is sharded over the local devices (a 1-D mesh,
bit-identical to one device); grids of many points build params once per distinct value
of each parameter when the params are separable. ``bdpd_jax.sweeps.distributed`` runs the chunks
on a Dask cluster and ``bdpd_jax.sweeps.sweep_file`` / ``bdpd sweep`` run a TOML spec resumably.
See docs/semantics.md §12.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..config.budget import arena_steps
from ..config.game import ArenaConfig
from ..config.limits import DEFAULT_MAX_BATCH
from ..prepare.paths import ConfigBase, apply_values, check_paths, config_base, parse_path, resolve
from ..prepare.prepared import PreparedRun, prepare
from ..run.options import RunOptions
from .build import DEVICE_COPIES, ROW_CELL_BYTES, bytes_per_arena, resolve_devices
from .plan import SEPARABLE_MIN_POINTS, SweepPlan, cached_plan
from .points import explicit_points, grid_points, points_table, sample_points
from .results import POINT_OUTCOMES, Z95, Rows, SweepResults, aggregate, combine

__all__ = [
    "DEVICE_COPIES",
    "POINT_OUTCOMES",
    "ROW_CELL_BYTES",
    "RunOptions",
    "SEPARABLE_MIN_POINTS",
    "Z95",
    "ConfigBase",
    "SweepPlan",
    "SweepResults",
    "aggregate",
    "cached_plan",
    "apply_values",
    "bytes_per_arena",
    "check_paths",
    "config_base",
    "explicit_points",
    "grid_points",
    "parse_path",
    "points_table",
    "point_steps",
    "resolve",
    "resolve_devices",
    "run_here",
    "run_points",
    "sample_points",
    "sweep",
]


# A way to run a plan's chunks: (plan, progress) -> (k, rows of chunk k) for every chunk, in
# any order (here: :func:`run_here`; on a Dask cluster: bdpd_jax/sweeps/distributed.py).
ChunkRunner = Callable[["SweepPlan", "bool | None"], Iterable[tuple[int, Rows]]]


def run_here(plan: SweepPlan, progress: bool | None = None) -> Iterator[tuple[int, Rows]]:
    """Every chunk of ``plan`` in this process, in order (a progress bar when asked, or by
    default when the run has more than four turn chunks)."""
    bar = None
    n_bar = plan.n_chunks * math.ceil(plan.max_turns / plan.chunk_turns)
    if progress or (progress is None and n_bar > 4):
        from tqdm.auto import tqdm  # only when a bar is shown: tqdm.auto probes for notebook widgets

        bar = tqdm(total=n_bar, desc="sweep chunks", unit="chunk", leave=False)
    try:
        for k in range(plan.n_chunks):
            yield k, plan.chunk_columns(k, bar)  # (the frame is built when first read)
    finally:
        if bar is not None:
            bar.close()


def run_points(
    config: PreparedRun | ArenaConfig | dict[str, Any] | str,
    table: pd.DataFrame,
    options: RunOptions,
    *,
    chunks: ChunkRunner = run_here,
) -> SweepResults:
    """Run every row of ``table`` (columns = config paths) ``options.replicates`` times in one
    batched program; see :func:`sweep`. ``config``: the base config or its PreparedRun.
    ``chunks`` runs the plan's chunks (default: here;
    ``bdpd_jax.sweeps.distributed.sweep_on_cluster`` passes a Dask cluster's)."""
    plan = cached_plan(prepared(config, options), table, options)
    parts = dict(chunks(plan, options.progress))
    arenas = combine([parts[k] for k in sorted(parts)])
    points = aggregate(arenas, plan.names, plan.outcomes())
    return SweepResults(arenas, points, plan.names, plan.meta())


def prepared(config: PreparedRun | ArenaConfig | dict[str, Any] | str, options: RunOptions) -> PreparedRun:
    """The base of a sweep: ``config`` itself when prepared, else ``prepare(config)`` (once
    per config content) with the options' generator."""
    return config if isinstance(config, PreparedRun) else prepare(config, generator=options.generator)


def point_steps(config: PreparedRun | ArenaConfig | dict[str, Any] | str, options: RunOptions) -> dict[str, int]:
    """``{"replicates": R, "turns": T, "players": N}``: what one point of a sweep of ``config``
    runs, for the run budget's check of a grid or of samples before their table is made."""
    cfg = prepared(config, options).config
    return {"replicates": int(options.replicates), **arena_steps(cfg, options.turns)}


def sweep(
    config: ArenaConfig | dict[str, Any] | str,
    grid: dict[str, Sequence[Any]] | None = None,
    samples: dict[str, tuple[float, float]] | None = None,
    points: pd.DataFrame | np.ndarray | None = None,
    replicates: int = 1,
    seed: int = 0,
    history: bool = False,
    max_batch: int = DEFAULT_MAX_BATCH,
    progress: bool | None = None,
    *,
    names: Sequence[str] | None = None,
    n_samples: int | None = None,
    turns: int | None = None,
    generator: str = "hash",
    common_random: bool = False,
    memory_budget: int | None = None,
    devices: Any = None,
    chunks: ChunkRunner = run_here,
) -> SweepResults:
    """Run a parameter sweep of ``config`` as one batched run that compiles once.

    Exactly one of:
        grid: ``{path: [values]}``, the cartesian product (first path varies slowest);
        samples: ``{path: (low, high)}`` with ``n_samples``: points uniform in the box, drawn
            by ``numpy.random.default_rng(seed)``; a float drawn for an int field is rounded;
        points: a DataFrame (columns = paths) or an (N, D) array with ``names=``.
    Every point x replicate is one arena; arena ``i`` is point ``i // replicates``,
    replicate ``i % replicates``, and equals ``simulate(config_at_point, seed=seed,
    arena_offset=i)``. At most ``max_batch`` arenas run at once.
    history: keep per-turn records (per chunk) to add each arena's mean of the five
        governance metrics (``mean_<metric>``); frames of turns are not kept.
    turns: turns to play at every point (default: each point's ``model.maxTurns``).
    common_random: common random numbers: replicate ``r`` of every point draws from
        ``(seed, r)`` (equals ``simulate(config_at_point, seed=seed, arena_offset=r)``), so
        points differ only by their values (variance reduction for comparisons and
        sensitivity indices); default False: every arena has its own stream ``(seed, i)``.
    memory_budget: bytes a chunk may use (an estimate from the state, params and records of
        one arena, docs/semantics.md §12); chunks are sized to fit, never above max_batch.
    devices: where the arenas of a chunk run, sharded over a 1-D mesh along the batch axis:
        None (default) every local device, an int k the first k, or a list of jax devices.
        The chunk width is a multiple of the device count; results are bit-identical to
        one device.
    chunks: how the plan's chunks run (default: here, in order;
        ``bdpd_jax.sweeps.distributed.sweep_on_cluster`` passes a Dask cluster's).

    Returns a :class:`SweepResults`. Raises ValueError naming the path and value of a bad
    parameter, or the parameter that changes the static structure of the game.
    """
    options = RunOptions(
        replicates=replicates,
        seed=seed,
        history=history,
        turns=turns,
        max_batch=max_batch,
        memory_budget=memory_budget,
        generator=generator,
        round_ints=samples is not None,
        common_random=common_random,
        devices=devices,
        progress=progress,
    )
    base = prepared(config, options)  # validated and built once (per config content)
    table = points_table(
        grid, samples, points, names=names, n_samples=n_samples, seed=seed, per_point=point_steps(base, options)
    )
    return run_points(base, table, options, chunks=chunks)
